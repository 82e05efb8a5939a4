"""SequenceVectorizer: sentences of tokens to one sparse feature matrix per
sentence, through the templates."""
from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._dask import is_bag
from .._parallel import MIN_RANGE_TOKENS, n_threads, run
from .._publish import publishes, reads_model
from .._validation import N_JOBS_CONSTRAINT, describe
from ..chain import StackedSentences
from ._base import _SentencesOut
from ._templates import _MAX_OFFSET, _parse_templates, template_names
from ._featurize import NameTable, count_names, featurize
from ._fitted_index import FittedIndex
from ._tokens import _POSITION_FLAGS, _Corpus, columns_read


class SequenceVectorizer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Map sentences to per-token sparse feature matrices.

    Features are produced by templates (see :mod:`sklstruct.features` for
    the template mini-language); ``fit`` learns a vocabulary of feature
    names, ``transform`` returns one ``scipy.sparse.csr_matrix`` of shape
    ``(n_tokens, n_features_out_)`` per sentence, with value 1.0 for each
    feature of each token.  Features unseen during ``fit`` are ignored.

    Parameters
    ----------
    templates : list or tuple of str, default=("word",)
        Feature templates, e.g. ``["bias", "word", "suffix3", "pos[-1]|pos"]``.
    window : int, default=0
        Templates written without an explicit offset (except ``bias``) are
        expanded to offsets ``-window`` to ``+window``.  At most 1000, as are
        explicit offsets; the templates may expand to at most 10000 template
        instances of 100000 atoms in all.
    min_freq : int, default=1
        Features occurring on fewer than ``min_freq`` tokens of the training
        data are dropped from the vocabulary.  Must be 1 with hashing.
    hashing : bool, default=False
        If True, map feature names to columns with
        ``FeatureHasher(n_features, input_type="string",
        alternate_sign=False)`` instead of a learned vocabulary (colliding
        features of a token add up).
    n_features : int, default=2**20
        Number of columns with ``hashing=True``; ignored otherwise.
    boundary : {"symbol", "skip"}, default="symbol"
        What an atom reading beyond the sentence gives: the value
        ``__BOS__`` / ``__EOS__`` (``"symbol"``: ``word[-1]=__BOS__`` on the
        first token), or no feature (``"skip"``: CRFsuite's convention, as
        in sklearn-crfsuite's tutorial, whose ``BOS`` / ``EOS`` features are
        the ``is_first`` / ``is_last`` flags here).
    clusters : None, mapping of str to str, or BrownClusters, default=None
        Word clusters for the ``clusterN`` atoms: a mapping from a word to
        its bit-string path (``"0110..."``), such as
        ``BrownClusters().fit(X).clusters_``, or a :class:`BrownClusters`:
        a fitted one gives its ``clusters_``; an unfitted one is cloned and
        fitted on the ``X`` given to :meth:`fit` (so that the clusters come
        from the training words only).  A template with a ``clusterN`` atom
        needs it.
    n_jobs : int, default=None
        Threads of :meth:`transform`, each featurizing a block of sentences
        (the compiled featurizer releases the GIL); None means 1, -1 all
        CPUs.  The result does not depend on it.
    missing_columns : {"raise", "drop"}, default="raise"
        What :meth:`fit` does with a template reading a column that the
        tokens do not have (``pos`` of word-only tokens): raise, or drop the
        template (``templates_`` lists those kept; the presets of
        :func:`feature_set` drop, so that one preset serves plain words and
        ``(word, POS, ...)`` tokens alike).  Whether a column is there is
        read from the first token; a column missing from only some tokens
        is an error either way.

    Attributes
    ----------
    templates_ : list of str
        Canonical template instances after window expansion, in the order
        their features appear in :meth:`token_features` (a disjunctive
        template, ``lower[-3..-1]``, once).  Together they re-parse to the
        same instances with ``window=0``.
    vocabulary_ : dict of str to int
        Feature name to column, names sorted alphabetically (not set with
        ``hashing=True``).
    n_features_out_ : int
        Number of output columns.
    clusters_ : dict of str to str or None
        The word clusters the ``clusterN`` atoms read (None without
        ``clusters``).

    See Also
    --------
    feature_set : Preset feature sets S1, S2, S3 of Altun et al. (2003).

    Notes
    -----
    There is no ``n_features_in_``: the input is not a fixed-width array.

    Examples
    --------
    >>> from sklstruct.features import SequenceVectorizer
    >>> X = [[("He", "PRP"), ("reckons", "VBZ")]]
    >>> vec = SequenceVectorizer(["bias", "word", "pos[-1]|pos"]).fit(X)
    >>> vec.token_features(X)[0][1]
    ['bias', 'word=reckons', 'pos[-1]|pos=PRP|VBZ']
    >>> [m.shape for m in vec.transform(X)]
    [(2, 5)]
    """

    _parameter_constraints = {
        "templates": [list, tuple],
        "window": [Interval(Integral, 0, _MAX_OFFSET, closed="both")],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "hashing": ["boolean"],
        "n_features": [Interval(Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "boundary": [StrOptions({"symbol", "skip"})],
        "n_jobs": N_JOBS_CONSTRAINT,
        "clusters": "no_validation",     # checked by _resolve_clusters
        "missing_columns": [StrOptions({"raise", "drop"})],
    }

    def __init__(
        self, templates=("word",), *, window=0, min_freq=1, hashing=False,
        n_features=2**20, boundary="symbol", n_jobs=None, clusters=None,
        missing_columns="raise",
    ):
        self.templates = templates
        self.window = window
        self.min_freq = min_freq
        self.hashing = hashing
        self.n_features = n_features
        self.boundary = boundary
        self.n_jobs = n_jobs
        self.clusters = clusters
        self.missing_columns = missing_columns

    # -- fitting ------------------------------------------------------------

    def _prepare(self):
        """Validate the parameters and parse the templates."""
        for param in ("window", "min_freq", "n_features"):
            if isinstance(getattr(self, param), (bool, np.bool_)):
                raise TypeError(
                    f"{param}={getattr(self, param)} must be an int, not a bool."
                )
        if self.hashing and self.min_freq != 1:
            raise ValueError(
                f"min_freq={self.min_freq} cannot be used with hashing=True: "
                "hashed features keep no counts; use min_freq=1."
            )
        return _parse_templates(self.templates, self.window)

    def _resolve_clusters(self, instances, corpus=None):
        """The word -> path mapping of ``clusters`` (checked), fitting an
        unfitted BrownClusters on ``corpus``'s sentences; None without."""
        from .clusters import BrownClusters
        clusters = self.clusters
        uses = any(k == "derived" and isinstance(arg, tuple) and arg[0] == "cluster"
                   for _, atoms in instances for k, arg, _, _, _ in atoms)
        if clusters is None:
            if uses:
                raise ValueError("the templates use clusterN atoms, which need clusters: "
                                 "pass clusters=<mapping word -> path> or a BrownClusters.")
            return None
        if isinstance(clusters, BrownClusters):
            if hasattr(clusters, "clusters_"):
                clusters = clusters.clusters_
            elif corpus is None:
                raise ValueError("clusters is an unfitted BrownClusters: fit the "
                                 "vectorizer (which fits a clone of it) first.")
            else:
                starts = corpus.starts.tolist()
                sentences = [corpus.flat[a:b] for a, b in zip(starts[:-1], starts[1:])]
                clusters = clone(self.clusters).fit(sentences).clusters_
        elif not isinstance(clusters, Mapping):
            raise TypeError(f"clusters must be None, a mapping of words to bit-string "
                            f"paths or a BrownClusters; got {type(clusters).__name__}.")
        return _check_clusters(clusters)

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the template instances and the vocabulary of features.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str), or
            a ``dask.bag`` of them (with a ``dask.distributed`` client): the
            names are counted on the workers, partition by partition, and
            added in a tree there; the vocabulary is a serial fit's.
        y : None
            Ignored.

        Returns
        -------
        self : SequenceVectorizer
            Fitted vectorizer.
        """
        if is_bag(X):
            from ._bags import fit_bag       # dask is optional: imported when used
            return fit_bag(self, X)
        self._fit(_Corpus(X, self.boundary))
        return self

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit to ``X`` and transform it, computing the features once.

        Parameters
        ----------
        X : sequence of sentences
            As in :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        Xt : StackedSentences
            One ``(n_tokens, n_features_out_)`` float64 CSR matrix per sentence,
            held as one stacked matrix (see :meth:`transform`).
        """
        if is_bag(X):
            from ._bags import fit_bag, transform_bag
            return transform_bag(fit_bag(self, X), X)
        corpus = _Corpus(X, self.boundary)
        self._fit(corpus)
        return self._assemble(corpus)

    def _fit(self, corpus):
        """Fit on ``corpus``."""
        instances = self._instances_of(corpus)
        # every column is read, in hashing mode too: a missing one is an error
        program = corpus.program(instances)
        if self.hashing:
            self.__dict__.pop("vocabulary_", None)
            self._set_templates(instances, self.n_features, None)
            return
        # Names from different templates differ (their prefixes do); a name
        # met twice within a template (a word "__BOS__" and the symbol) is
        # one entry of the table, with the counts added.
        table, counts, export = count_names(program)
        names = table.names()
        kept, columns = self._set_vocabulary(names, counts)
        table.set_values(columns)
        values, tables = corpus.value_tables
        index = FittedIndex.from_counts(instances, values, tables, export, columns)
        self._set_templates(instances, len(kept), table, index)

    def _instances_of(self, corpus):
        """The template instances that fit keeps for ``corpus`` (those of
        the columns its tokens have, with ``missing_columns="drop"``); sets
        the resolved ``clusters_``."""
        instances = self._prepare()
        if self.missing_columns == "drop":
            instances = _with_columns_of(instances, corpus)
        self.clusters_ = corpus.clusters = self._resolve_clusters(instances, corpus)
        return instances

    def _set_vocabulary(self, names, counts):
        """``vocabulary_`` from every feature name of the training data and
        its count: the names ``min_freq`` keeps, in sorted order (so that the
        columns depend on the set of names only, not on where they were
        met).  Returns (kept, columns): the kept names' indices into
        ``names`` and each name's column (-1: left out)."""
        min_freq = self.min_freq
        kept = (np.arange(len(names)) if min_freq == 1
                else np.flatnonzero(counts >= min_freq))
        if not len(kept):
            raise ValueError(
                "No feature fires on X: the vocabulary is empty."
                if not len(names)
                else f"No feature occurs at least min_freq={min_freq} times; "
                "lower min_freq."
            )
        kept_names = [names[i] for i in kept.tolist()]
        order = sorted(range(len(kept_names)), key=kept_names.__getitem__)
        columns = np.full(len(names), -1, dtype=np.int32)
        columns[kept[order]] = np.arange(len(order), dtype=np.int32)
        self.vocabulary_ = dict(zip([kept_names[i] for i in order], range(len(order))))
        return kept, columns

    def _set_templates(self, instances, n_features_out, table, index=None):
        self._instances = instances
        self._boundary = self.boundary
        # transform keeps the fitted mode and width, whatever set_params says later
        self._hashing = bool(self.hashing)
        self.templates_ = template_names(instances)
        self.n_features_out_ = n_features_out
        # the vocabulary as the featurizer reads it; a mutable holder, so that
        # a table rebuilt by transform (after unpickling) is kept
        self._compiled = {"vocabulary": getattr(self, "vocabulary_", None), "table": table}
        if index is not None:
            self._compiled["index"] = index

    def __getstate__(self):
        state = super().__getstate__()
        if "_compiled" in state:
            state = dict(state, _compiled={})   # rebuilt from vocabulary_
        return state

    # -- transforming -------------------------------------------------------

    def _compiled_vocabulary(self):
        """``(name_table, index)``: the vocabulary as a
        :class:`._featurize.NameTable` and a :class:`._fitted_index.FittedIndex`
        (built once per fitted vocabulary), or ``(None, None)`` with hashing."""
        if self._hashing:
            return None, None
        cache = self.__dict__.get("_compiled")
        if cache is None:
            cache = {}
        if cache.get("vocabulary") is not self.vocabulary_:
            cache.clear()
            cache["vocabulary"] = self.vocabulary_
        if cache.get("index") is None:
            cache["index"] = FittedIndex(self._instances, self.vocabulary_)
        if cache.get("table") is None:
            if any(lookup is None for lookup in cache["index"].lookups):
                cache["table"] = NameTable.from_names(self.vocabulary_.keys(),
                                                      self.vocabulary_.values())
            else:
                cache["table"] = NameTable()   # every instance has its lookup
        return cache["table"], cache["index"]

    def _assemble(self, corpus):
        """The stacked matrix of ``corpus``, featurized by the compiled
        featurizer in blocks of sentences, one per thread."""
        table, index = self._compiled_vocabulary()
        program = corpus.program(self._instances, index)
        n_out = self.n_features_out_
        offsets = corpus.starts.astype(np.int64)
        n_sentences, n_tokens = len(offsets) - 1, int(offsets[-1])
        k = n_threads(getattr(self, "n_jobs", None), -(-n_tokens // MIN_RANGE_TOKENS))
        cuts = np.unique(np.r_[0, np.searchsorted(
            offsets, np.linspace(0, n_tokens, k + 1)[1:-1]), n_sentences]).tolist()
        parts = run(k, lambda a, b: featurize(program, a, b, table, n_out),
                    list(zip(cuts[:-1], cuts[1:])))
        if len(parts) == 1:
            indptr, indices, data = parts[0]
        else:
            shift = np.cumsum([0] + [p[0][-1] for p in parts[:-1]])
            indptr = np.concatenate([[0]] + [p[0][1:] + d for p, d in zip(parts, shift)])
            indices = np.concatenate([p[1] for p in parts])
            data = np.concatenate([p[2] for p in parts])
        if len(indices) and indices.max() >= n_out:
            # the stacked matrix is trusted by the kernels: it must not name a
            # column beyond its width
            raise RuntimeError(f"feature column {indices.max()} beyond the fitted width {n_out}")
        matrix = sp.csr_matrix((data, indices, indptr), shape=(n_tokens, n_out))
        # canonical already (featurize sorts each row and sums hashed
        # collisions): say so rather than have scipy check it again
        matrix.has_canonical_format = True
        # one stacked matrix: the taggers read it as it is (no cut and re-stack)
        # (the word keys, which only a tag dictionary reads, when first read)
        return StackedSentences._trusted(matrix, offsets, corpus.deferred_word_keys())

    @reads_model
    def transform(self, X):
        """Compute the feature matrix of each sentence.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).

        Returns
        -------
        Xt : StackedSentences
            A list of ``(n_tokens, n_features_out_)`` float64 CSR matrices, one
            per sentence, held as one stacked matrix (see
            :class:`sklstruct.chain.StackedSentences`); features not in the
            vocabulary are ignored.  For a ``dask.bag`` of sentences, the bag
            of their matrices, computed on the workers.
        """
        check_is_fitted(self, "templates_")
        if is_bag(X):
            from ._bags import transform_bag
            return transform_bag(self, X)
        return self._assemble(_Corpus(X, self._boundary, self.clusters_,
                                      columns_read(self._instances)))

    @reads_model
    def token_features(self, X):
        """Feature names of every token, exactly as indexed by ``transform``.

        Uses the fitted templates if the vectorizer is fitted, the current
        parameters otherwise.  The names are not filtered by the vocabulary.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).

        Returns
        -------
        features : list of list of list of str
            ``features[s][t]`` lists the features of token ``t`` of sentence
            ``s``, in template order.
        """
        if hasattr(self, "templates_"):
            instances, boundary = self._instances, self._boundary
            clusters = self.clusters_
        else:
            self._validate_params()
            instances, boundary = self._prepare(), self.boundary
            clusters = self._resolve_clusters(instances)
        corpus = _Corpus(X, boundary, clusters)
        per_template = []
        for name, atoms in instances:
            codes, names, mask = corpus.template(name, atoms)
            values = np.array(names, dtype=object)[codes]
            if mask is not None:
                values[~mask] = None
            per_template.append(values.tolist())
        if any(None in v for v in per_template):
            flat = [[f for f in row if f is not None] for row in zip(*per_template)]
        else:
            flat = [list(row) for row in zip(*per_template)]
        starts = corpus.starts.tolist()
        return [flat[a:b] for a, b in zip(starts[:-1], starts[1:])]

    @reads_model
    def get_feature_names_out(self, input_features=None):
        """Feature names of the output columns.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
            Name of each column (vocabulary mode only).
        """
        check_is_fitted(self, "templates_")
        if self._hashing:
            raise ValueError(
                "get_feature_names_out is not available with hashing=True: "
                "hashed columns have no names."
            )
        names = np.empty(len(self.vocabulary_), dtype=object)
        for name, i in self.vocabulary_.items():
            names[i] = name
        return names

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags


def _check_clusters(clusters):
    """``clusters`` as a dict of str to bit-string paths, or an error naming
    the first bad entry."""
    out = {}
    for word, path in clusters.items():
        if not isinstance(word, str):
            raise TypeError(f"clusters: every key must be a word (str); got {word!r} "
                            f"({type(word).__name__}).")
        if not isinstance(path, str) or path.strip("01"):
            raise ValueError(f"clusters: the path of {word!r} must be a string of '0' and "
                             f"'1' characters; got {path!r}.")
        out[str(word)] = str(path)
    return out


def _with_columns_of(instances, corpus):
    """The template instances whose atoms read only columns that the
    corpus' first token has (position flags and ``bias`` read none)."""
    first = corpus.flat[0]

    def has(column):
        try:
            corpus._getter(column)[0](first)
        except (KeyError, IndexError, TypeError):
            return False
        return True

    kept = [(name, atoms) for name, atoms in instances
            if all(kind == "bias" or arg in _POSITION_FLAGS or has(column)
                   for kind, arg, _, column, _ in atoms)]
    if not kept:
        raise ValueError("X: the tokens have none of the columns the templates read "
                         f"(first token: {describe(first)})")
    return kept

"""EmbeddingFeatures: word embeddings as real-valued token features, rescaled
as Turian et al. (2010) do, and k-means clusters of them."""
import zlib
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.cluster import MiniBatchKMeans
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._parallel import n_threads
from .._publish import publishes, reads_model
from .._validation import N_JOBS_CONSTRAINT, InputTypeError, describe
from ..chain import StackedSentences
from ._base import _SentencesOut
from ._tokens import _Corpus

#: gensim's model class for each value of ``train``.
TRAINERS = {"word2vec": "Word2Vec", "fasttext": "FastText"}

#: Slots (tokens x columns before the zeros are dropped) :meth:`transform`
#: fills at a time: it works on chunks of tokens of about 32 MiB.
_SLOTS_PER_CHUNK = 1 << 22

#: Largest ``window`` (as the templates' offsets of SequenceVectorizer).
MAX_WINDOW = 1000

# gensim arguments that EmbeddingFeatures sets itself: the parameter to use instead
_OWN_TRAIN_ARGS = {"sentences": "X", "corpus_iterable": "X", "corpus_file": "X",
                   "vector_size": "dim", "seed": "random_state", "workers": "n_jobs",
                   "hashfxn": None}


def _stable_hash(text):
    """The hash gensim seeds each word's initial vector with: the same in
    every process (gensim's default, Python's ``hash``, changes with
    ``PYTHONHASHSEED``, and so would the vectors)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _chunk(table, clusters, ks, near, dim):
    """The CSR data, column indices and row counts of a chunk of tokens.

    ``near[j]`` is the row (of ``table`` and ``clusters``) of the word at the
    ``j``-th offset from each token of the chunk.  Every token has the same
    slots: the vector of each offset, then one slot per clustering and
    offset; they are filled by gathering rows, and the zero ones (beyond the
    sentence, unknown words with ``unknown="zero"``, no cluster, zero
    entries) are dropped in one pass, row by row, which keeps the columns
    of each row sorted."""
    n_off = len(near)
    n_rows = near[0].shape[0]
    n_slots = n_off * (dim + len(ks))
    values = np.empty((n_rows, n_slots), dtype=np.float64)
    columns = np.empty((1, n_slots), dtype=np.int32)
    cluster_columns = np.empty((n_rows, n_off * len(ks)), dtype=np.int32)
    for j, rows in enumerate(near):
        values[:, j * dim:(j + 1) * dim] = table[rows]
    columns[0, :n_off * dim] = np.arange(n_off * dim)
    slot, col0 = n_off * dim, n_off * dim
    for i, k in enumerate(ks):
        for j, rows in enumerate(near):
            c = clusters[rows, i]
            values[:, slot] = c >= 0
            cluster_columns[:, slot - n_off * dim] = col0 + np.maximum(c, 0)
            slot += 1
            col0 += k
    keep = values != 0
    columns = np.broadcast_to(columns, (n_rows, n_slots)).copy()
    columns[:, n_off * dim:] = cluster_columns
    return values[keep], columns[keep], keep.sum(axis=1)


def _offset_name(offset):
    return "" if offset == 0 else f"[{offset:+d}]"


def _check_int(value, name, lo):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < lo:
        raise InputTypeError(f"{name}: expected an int >= {lo}; got {describe(value)}"
                             + (" (a bool)" if isinstance(value, (bool, np.bool_)) else ""))
    return int(value)


def _as_table(words, rows, where):
    """``rows`` (one vector per word) as a 2-D float array; a vector that is
    not a 1-D array of finite reals, or whose length differs from the
    first's, is named."""
    table = None
    try:
        table = np.array(rows, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    if table is None or table.ndim != 2:
        dim = first = None
        for w, r in zip(words, rows):
            try:
                a = np.asarray(r, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InputTypeError(f"{where}[{w!r}]: not a vector of real numbers "
                                     f"({exc})") from None
            if a.ndim != 1:
                raise ValueError(f"{where}[{w!r}]: expected a 1-D vector; got an array of "
                                 f"shape {a.shape}")
            if dim is None:
                dim, first = a.shape[0], w
            elif a.shape[0] != dim:
                raise ValueError(f"{where}[{w!r}]: has {a.shape[0]} dimensions, but "
                                 f"{where}[{first!r}] has {dim}: all vectors must have "
                                 "the same length")
        raise AssertionError("unreachable")  # pragma: no cover
    return table


def _check_table(words, table, where):
    """Vectors of at least one dimension, all finite; errors name the word."""
    if table.shape[1] == 0:
        raise ValueError(f"{where}: the vectors have 0 dimensions")
    finite = np.isfinite(table)
    if not finite.all():
        i = int(np.flatnonzero(~finite.all(axis=1))[0])
        j = int(np.flatnonzero(~finite[i])[0])
        raise ValueError(f"{where}[{words[i]!r}]: value {float(table[i, j])!r} at index {j} "
                         "is not finite (NaN or infinity)")
    return table


def _check_words(words, where):
    for w in words:
        if not isinstance(w, str):
            raise InputTypeError(f"{where}: key {describe(w)} is not a string (got "
                                 f"{type(w).__name__}); the keys are the words")


def _read_vectors(vectors, where="vectors"):
    """The words and vectors of a mapping or of an object like gensim's
    KeyedVectors (``key_to_index`` and ``vectors``), and the object to look
    further words up in at transform (None for a mapping); or
    ``(None, None, vectors)`` for an object that can only be looked up in."""
    if isinstance(vectors, Mapping):
        words = list(vectors.keys())
        _check_words(words, where)
        rows = list(vectors.values())
        lookup = None
        table = _as_table(words, rows, where) if words else None
    elif hasattr(vectors, "key_to_index") and hasattr(vectors, "vectors"):
        index = dict(vectors.key_to_index)
        words = list(index)
        _check_words(words, where)
        array = np.asarray(vectors.vectors)
        if array.ndim != 2 or array.dtype.kind not in "biuf":
            raise ValueError(f"{where}.vectors: expected a 2-D array of real numbers; got "
                             f"shape {array.shape} of {array.dtype}")
        positions = np.fromiter(index.values(), dtype=np.int64, count=len(index))
        if positions.size and (positions.min() < 0 or positions.max() >= array.shape[0]):
            raise ValueError(f"{where}.key_to_index: a row index is out of range for "
                             f"{where}.vectors' {array.shape[0]} rows")
        # float32 vectors (gensim's) stay float32: half the memory
        dtype = np.float32 if array.dtype == np.float32 else np.float64
        table = array[positions].astype(dtype, copy=False)
        lookup = vectors if hasattr(vectors, "__contains__") and \
            hasattr(vectors, "__getitem__") else None
    elif hasattr(vectors, "__getitem__") and hasattr(vectors, "__contains__"):
        return None, None, vectors
    else:
        raise InputTypeError(f"{where}: expected a mapping of words to vectors or an object "
                             "with gensim KeyedVectors' interface (key_to_index and vectors, "
                             f"or __getitem__ and __contains__); got {type(vectors).__name__}")
    if not words:
        raise ValueError(f"{where}: contains no vectors")
    return words, _check_table(words, table, where), lookup


class EmbeddingFeatures(_SentencesOut, TransformerMixin, BaseEstimator):
    """Word embeddings as token features, and k-means clusters of them.

    Each token gets the vector of its word as real-valued features, rescaled
    as Turian et al. (2010, section 7.3) do: all vectors are multiplied by
    ``scale / s``, where ``s`` is the standard deviation of all the entries
    of all the vectors, so that the features have standard deviation
    ``scale`` (0.1 in their experiments, which works for perceptron- and
    CRF-like learners whose other features are 0/1 indicators).  With
    ``kmeans=(k1, k2, ...)``, the vectors are also clustered by
    scikit-learn's :class:`~sklearn.cluster.MiniBatchKMeans` once for each
    ``k`` and each token gets an indicator of its word's cluster at each
    granularity, the embeddings' counterpart of Brown cluster prefixes.

    The vectors are given (``vectors``: a mapping of words to vectors, or
    gensim ``KeyedVectors``) or, with ``train="word2vec"`` or
    ``"fasttext"``, learned by gensim (Mikolov et al., 2013; Bojanowski et
    al., 2017) from the sentences given to :meth:`fit`, unlabeled text
    being what they need.  gensim is an optional dependency (``pip install
    gensim``), needed only for training.

    The output of :meth:`transform` is a
    :class:`~sklstruct.chain.StackedSentences`: one float64 CSR row per
    token, columns in this order:

    * for each offset ``o`` in ``-window .. window``, the ``d`` entries of
      the (scaled) vector of the word ``o`` tokens away (none beyond the
      sentence), named ``emb{j}`` (``o = 0``) or ``emb{j}[{o:+d}]``;
    * for each ``k`` of ``kmeans`` and each offset, ``k`` indicator
      columns, one of which is 1 (none beyond the sentence or for a word
      without a cluster), named ``kmeans{k}={c}`` or ``kmeans{k}[{o:+d}]={c}``.

    Put it beside a :class:`~sklstruct.SequenceVectorizer` with
    :class:`~sklstruct.SentenceFeatureUnion` to give a tagger both.

    Parameters
    ----------
    vectors : mapping or KeyedVectors-like, default=None
        The word vectors: a mapping (e.g. a dict) of words (str) to 1-D
        array-likes of one length, or an object with the interface of
        gensim's ``KeyedVectors``: ``key_to_index`` (word -> row) and
        ``vectors`` (the rows), or only ``__getitem__`` and
        ``__contains__`` (then the vocabulary is the words of ``X`` found in
        it at fit, and other words are looked up at transform).  Copied at
        fit.  Objects that can be looked up (``KeyedVectors``) are kept for
        :meth:`transform` to look up the words that have no vector in
        :attr:`vocabulary_`: gensim's ``FastTextKeyedVectors`` gives any
        word one from its character n-grams.
    train : {"word2vec", "fasttext"}, default=None
        With ``vectors=None``: train gensim's ``Word2Vec`` or ``FastText``
        on the sentences of ``X`` given to :meth:`fit` (with ``lowercase``,
        their lower-cased words).  Needs gensim.
    train_params : dict, default=None
        Further arguments of the gensim model (e.g. ``{"min_count": 1,
        "epochs": 10, "window": 5, "sg": 1}``); gensim's defaults otherwise
        (note ``min_count=5``: rarer words get no vector).  ``vector_size``,
        ``seed`` and ``workers`` are ``dim``, ``random_state`` and
        ``n_jobs``.
    dim : int, default=50
        The dimension of trained vectors (gensim's ``vector_size``; Turian
        et al. found 50 enough for chunking and NER).  Given vectors keep
        theirs.
    scale : float or None, default=0.1
        The standard deviation of the features over all entries of the
        vocabulary's vectors; None keeps the vectors as they are.
    kmeans : int or sequence of int, default=()
        The numbers of clusters of each k-means clustering of the vectors
        (e.g. ``(16, 64, 256)``); each must be at most the number of
        vectors.
    lowercase : bool, default=False
        Look words up (and train) lower-cased, for lower-cased embeddings
        such as Turian et al.'s.
    unknown : {"zero", "mean"}, default="zero"
        The vector of a word without one: no features (a zero vector), or
        the mean of the vocabulary's (scaled) vectors,
        :attr:`unknown_vector_`.  Either way it has no k-means cluster.
    window : int, default=0
        Also give the features of the words up to ``window`` tokens before
        and after each token (as :class:`~sklstruct.SequenceVectorizer`'s
        ``window``).
    random_state : int, RandomState instance or None, default=None
        Seeds the k-means clusterings and gensim's training.  gensim's
        training is reproducible only with one worker (``n_jobs=None`` or
        1).
    n_jobs : int, default=None
        gensim's worker threads for training (joblib's convention; None is
        1).

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Each word with a vector, and its row of :attr:`vectors_`.
    vectors_ : ndarray of shape (n_words, n_dims)
        The scaled vectors (float32 when the given ones were, as gensim's
        are; float64 otherwise).
    scale_factor_ : float
        What the vectors were multiplied by (``scale / s``; 1.0 with
        ``scale=None``).
    unknown_vector_ : ndarray of shape (n_dims,)
        The vector of words without one (zeros, or the mean of
        :attr:`vectors_`).
    kmeans_ : list of MiniBatchKMeans
        The fitted clusterings, one per ``kmeans`` entry.
    clusters_ : ndarray of shape (n_words, len(kmeans)), dtype int
        Each word's cluster in each clustering.
    lookup_ : object or None
        The object :meth:`transform` looks words outside
        :attr:`vocabulary_` up in (see ``vectors``), or None.
    model_ : gensim model or None
        The trained gensim model (``train``), else None.

    Notes
    -----
    :meth:`transform` reads the words of all tokens at once (the compiled
    column reader of :class:`~sklstruct.SequenceVectorizer`), looks each
    distinct word up once and gathers the rows with NumPy, in chunks of
    tokens of about 32 MiB; memory is that of the output, at most ``12 *
    n_tokens * (2 * window + 1) * (n_dims + len(kmeans))`` bytes.  The output also carries each token's word key
    (:attr:`sklstruct.chain.StackedSentences.keys`), as SequenceVectorizer's
    does, so that a :class:`~sklstruct.ConstrainedTagger` can follow it.

    References
    ----------
    Turian, J., Ratinov, L. and Bengio, Y. (2010). Word representations: a
    simple and general method for semi-supervised learning. In
    *Proceedings of the 48th Annual Meeting of the Association for
    Computational Linguistics (ACL)*, 384-394.

    Mikolov, T., Sutskever, I., Chen, K., Corrado, G. S. and Dean, J.
    (2013). Distributed representations of words and phrases and their
    compositionality. In *Advances in Neural Information Processing
    Systems 26 (NIPS)*, 3111-3119.

    Bojanowski, P., Grave, E., Joulin, A. and Mikolov, T. (2017). Enriching
    word vectors with subword information. *Transactions of the Association
    for Computational Linguistics*, 5, 135-146.

    Examples
    --------
    >>> from sklstruct import EmbeddingFeatures
    >>> vectors = {"the": [1.0, 0.0], "cat": [0.0, 1.0], "sat": [1.0, 1.0]}
    >>> emb = EmbeddingFeatures(vectors, scale=None).fit([["the", "cat"]])
    >>> emb.transform([["the", "dog", "sat"]])[0].toarray()
    array([[1., 0.],
           [0., 0.],
           [1., 1.]])
    >>> emb.get_feature_names_out().tolist()
    ['emb0', 'emb1']
    """

    _parameter_constraints = {
        "vectors": "no_validation",
        "train": [StrOptions(set(TRAINERS)), None],
        "train_params": [dict, None],
        "dim": [Interval(Integral, 1, None, closed="left")],
        "scale": [Interval(Real, 0, None, closed="neither"), None],
        "kmeans": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "lowercase": ["boolean"],
        "unknown": [StrOptions({"zero", "mean"})],
        "window": [Interval(Integral, 0, MAX_WINDOW, closed="both")],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    def __init__(self, vectors=None, *, train=None, train_params=None, dim=50, scale=0.1,
                 kmeans=(), lowercase=False, unknown="zero", window=0, random_state=None,
                 n_jobs=None):
        self.vectors = vectors
        self.train = train
        self.train_params = train_params
        self.dim = dim
        self.scale = scale
        self.kmeans = kmeans
        self.lowercase = lowercase
        self.unknown = unknown
        self.window = window
        self.random_state = random_state
        self.n_jobs = n_jobs

    # -- fit ------------------------------------------------------------------------

    def _check_params(self):
        """What the constraints cannot say; the k-means sizes as a tuple."""
        _check_int(self.dim, "dim", 1)
        _check_int(self.window, "window", 0)
        if isinstance(self.scale, (bool, np.bool_)):
            raise InputTypeError(f"scale={self.scale} must be a float or None, not a bool")
        if (self.vectors is None) == (self.train is None):
            raise ValueError("EmbeddingFeatures: give either vectors (a mapping of words to "
                             "vectors, or gensim KeyedVectors) or train='word2vec' / "
                             f"'fasttext' ({'both' if self.train else 'neither'} given)")
        ks = [self.kmeans] if isinstance(self.kmeans, Integral) else list(self.kmeans)
        ks = tuple(_check_int(k, f"kmeans[{i}]", 1) for i, k in enumerate(ks))
        if len(set(ks)) != len(ks):
            raise ValueError(f"kmeans: {ks} gives a number of clusters twice")
        for name in self.train_params or {}:
            if name in _OWN_TRAIN_ARGS:
                own = _OWN_TRAIN_ARGS[name]
                raise ValueError(f"train_params: {name!r} is set by EmbeddingFeatures"
                                 + (f"; use its parameter {own}" if own else ""))
        return ks

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Take (or train) the vectors, rescale them and cluster them.

        Parameters
        ----------
        X : iterable of sentences
            A sentence is a non-empty sequence of tokens: strings,
            tuples/lists whose first element is the word, or dicts with key
            ``"word"``.  Read only for the words to train on (``train``) or
            to look up (``vectors`` that cannot list their words).
        y : None
            Ignored.

        Returns
        -------
        self : EmbeddingFeatures
        """
        ks = self._check_params()
        corpus = _Corpus(X)
        codes, words = corpus.column("word")
        words = self._looked_up(words, self.lowercase)
        rng = check_random_state(self.random_state)
        self.model_ = None
        if self.vectors is None:
            self.model_ = self._train(np.asarray(words, dtype=object)[codes], corpus.starts,
                                      rng)
            vocab, table, lookup = _read_vectors(self.model_.wv, "the trained vectors")
        else:
            vocab, table, lookup = _read_vectors(self.vectors)
            if vocab is None:           # look-up only: the words of X
                lookup = self.vectors
                vocab = [w for w in dict.fromkeys(words) if w in lookup]
                if not vocab:
                    raise ValueError("vectors: none of the words of X has a vector, and "
                                     "vectors cannot list its own words")
                table = _check_table(vocab, _as_table(vocab, [lookup[w] for w in vocab],
                                                      "vectors"), "vectors")
        self.scale_factor_ = self._scale_factor(table)
        if self.scale_factor_ != 1.0:
            table = table * table.dtype.type(self.scale_factor_)
        n_words = table.shape[0]
        self.vocabulary_ = dict(zip(vocab, range(n_words)))
        if len(self.vocabulary_) != n_words:
            raise ValueError("vectors: a word is given twice")
        table.flags.writeable = False
        self.vectors_ = table
        self.unknown_vector_ = (table.mean(axis=0, dtype=np.float64) if self.unknown == "mean"
                                else np.zeros(table.shape[1]))
        self.kmeans_ = []
        self.clusters_ = np.zeros((n_words, len(ks)), dtype=np.intp)
        for i, k in enumerate(ks):
            if k > n_words:
                raise ValueError(f"kmeans[{i}]={k}: more clusters than the {n_words} "
                                 "vectors")
            km = MiniBatchKMeans(n_clusters=k, n_init=3,
                                 random_state=rng.randint(np.iinfo(np.int32).max))
            self.clusters_[:, i] = km.fit_predict(table)
            self.kmeans_.append(km)
        self.lookup_ = lookup
        # what transform reads, as fitted (a set_params after fit changes nothing)
        self._n_kmeans = ks
        self._window = int(self.window)
        self._lowercase = bool(self.lowercase)
        self._unknown = self.unknown
        return self

    def _looked_up(self, words, lowercase):
        """The distinct words of X as they are looked up."""
        if not lowercase:
            return words
        return [w.lower() for w in words]

    def _scale_factor(self, table):
        if self.scale is None:
            return 1.0
        std = float(np.std(table, dtype=np.float64))
        if not (np.isfinite(std) and std > 0):
            raise ValueError(f"vectors: the standard deviation of their entries is {std!r}; "
                             f"cannot rescale it to scale={self.scale} (use scale=None)")
        return float(self.scale) / std

    def _train(self, tokens, starts, rng):
        """gensim's Word2Vec or FastText trained on the sentences."""
        try:
            from gensim import models
        except ImportError:
            raise ImportError(f"EmbeddingFeatures(train={self.train!r}) needs gensim, an "
                              "optional dependency of sklstruct: pip install gensim "
                              "(or pip install 'sklstruct[embeddings]'), or pass vectors"
                              ) from None
        sentences = [s.tolist() for s in np.split(tokens, starts[1:-1])]
        params = dict(vector_size=int(self.dim), seed=rng.randint(np.iinfo(np.int32).max),
                      workers=n_threads(self.n_jobs, 1 << 30), hashfxn=_stable_hash)
        params.update(self.train_params or {})
        model_class = getattr(models, TRAINERS[self.train])
        try:
            model = model_class(sentences=sentences, **params)
        except RuntimeError as exc:
            raise ValueError(f"X: gensim's {model_class.__name__} could not be trained "
                             f"({exc}); is every word rarer than min_count="
                             f"{params.get('min_count', 5)}?") from None
        if len(model.wv.key_to_index) == 0:
            raise ValueError(f"X: no word occurs min_count={params.get('min_count', 5)} times "
                             "or more; gensim learned no vector (lower min_count in "
                             "train_params)")
        return model

    # -- transform ----------------------------------------------------------------------

    def _rows(self, words):
        """For each distinct word: its vector (scaled), whether it has one,
        and its clusters (-1: none)."""
        get = self.vocabulary_.get
        index = np.fromiter((get(w, -1) for w in words), dtype=np.intp, count=len(words))
        found = index >= 0
        dim = self.vectors_.shape[1]
        table = np.empty((len(words), dim), dtype=np.float64)
        table[found] = self.vectors_[index[found]]
        clusters = np.full((len(words), self.clusters_.shape[1]), -1, dtype=np.intp)
        clusters[found] = self.clusters_[index[found]]
        missing = np.flatnonzero(~found)
        if self.lookup_ is not None and missing.size:
            lookup = self.lookup_
            extra = [i for i in missing.tolist() if words[i] in lookup]
            if extra:
                names = [words[i] for i in extra]
                rows = _check_table(names, _as_table(names, [lookup[w] for w in names],
                                                     "vectors"), "vectors")
                if rows.shape[1] != dim:
                    raise ValueError(f"vectors[{names[0]!r}]: has {rows.shape[1]} dimensions; "
                                     f"the fitted vectors have {dim}")
                table[extra] = rows * self.scale_factor_
                for i, km in enumerate(self.kmeans_):
                    clusters[extra, i] = km.predict(
                        table[extra].astype(km.cluster_centers_.dtype))
                found[extra] = True
        table[~found] = self.unknown_vector_
        return table, found, clusters

    @reads_model
    def transform(self, X):
        """The embedding features of every token.

        Parameters
        ----------
        X : iterable of sentences
            As in :meth:`fit`.

        Returns
        -------
        Xt : StackedSentences
            One float64 CSR row per token (columns as in the class
            description), with each token's word key.
        """
        check_is_fitted(self, "vectors_")
        corpus = _Corpus(X)
        codes, words = corpus.column("word")
        table, _, clusters = self._rows(self._looked_up(words, self._lowercase))
        n = corpus.n_tokens
        w = self._window
        dim = table.shape[1]
        ks = self._n_kmeans
        n_columns = (2 * w + 1) * (dim + sum(ks))
        if n_columns >= 2**31:
            raise ValueError(f"EmbeddingFeatures: {n_columns} columns, more than a CSR matrix "
                             "with 32-bit indices holds (reduce window or kmeans)")
        # one more row, of zeros, for the tokens beyond the sentence; unknown
        # words' rows hold unknown_vector_ (zeros, or the mean)
        table = np.vstack([table, np.zeros((1, dim))])
        clusters = np.vstack([clusters, np.full((1, len(ks)), -1, dtype=np.intp)])
        codes = np.append(codes, len(words))
        position = np.asarray(corpus.position)
        length = np.asarray(corpus.sentence_length)
        data, indices, counts = [], [], []
        step = max(1, _SLOTS_PER_CHUNK // ((2 * w + 1) * (dim + len(ks))))
        for a in range(0, n, step):
            b = min(n, a + step)
            rows = np.arange(a, b)
            # the word (code) of the token o positions away, for each offset
            near = [codes[np.where((position[a:b] + o >= 0) & (position[a:b] + o < length[a:b]),
                                   rows + o, n)] for o in range(-w, w + 1)]
            d, i, c = _chunk(table, clusters, ks, near, dim)
            data.append(d)
            indices.append(i)
            counts.append(c)
        data = np.concatenate(data) if data else np.zeros(0)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.concatenate(counts) if counts else [], out=indptr[1:])
        if indptr[-1] >= 2**31:
            raise ValueError(f"X: the features have {indptr[-1]} nonzeros, more than a CSR "
                             "matrix with 32-bit indices holds; transform fewer sentences at "
                             "a time")
        matrix = sp.csr_matrix((data, np.concatenate(indices) if indices else
                                np.zeros(0, dtype=np.int32), indptr.astype(np.int32)),
                               shape=(n, n_columns))
        matrix.has_sorted_indices = True
        return StackedSentences._trusted(matrix, np.asarray(corpus.starts, dtype=np.int64),
                                         corpus.word_keys())

    def get_feature_names_out(self, input_features=None):
        """The names of the output columns.

        Parameters
        ----------
        input_features : None
            Ignored (the input is tokens, not columns).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "vectors_")
        w = self._window
        dim = self.vectors_.shape[1]
        names = [f"emb{j}{_offset_name(o)}" for o in range(-w, w + 1) for j in range(dim)]
        for k in self._n_kmeans:
            names += [f"kmeans{k}{_offset_name(o)}={c}" for o in range(-w, w + 1)
                      for c in range(k)]
        return np.asarray(names, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        return tags

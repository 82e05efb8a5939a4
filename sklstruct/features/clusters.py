"""BrownClusters: hierarchical word clusters of Brown et al. (1992), computed
with the windowed algorithm of Liang (2005), and their ``wcluster`` paths files."""
import os
import time
from collections.abc import Mapping
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._parallel import n_threads, run
from .._progress import progress_bar
from .._publish import publishes, reads_model
from .._validation import (N_JOBS_CONSTRAINT, InputTypeError, check_alloc, check_sentence,
                           check_sentence_list, describe)
from ._base import _SentencesOut
from ._brown import BrownKernel

#: Longest word accepted, in characters (wcluster reads words into a
#: 16384-byte buffer; a longer "word" is almost surely a reading error).
MAX_WORD_LENGTH = 10_000

#: Rows of the loss table per thread, at least: a smaller table is updated
#: faster than threads are woken, step after step.
MIN_ROWS_PER_THREAD = 64

#: The path ``transform`` gives a word that has no cluster.
UNKNOWN_PATH = ""

# Characters a word may not contain: the paths file is tab-separated, one
# word a line.
_FORBIDDEN = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}


def _word_of(token, where):
    """The word of one token (str, tuple/list/array: column 0, mapping: "word")."""
    if isinstance(token, str):
        return token
    if isinstance(token, Mapping):
        if "word" not in token:
            raise ValueError(f"{where}: token {describe(token)} has no key 'word'")
        word = token["word"]
    elif isinstance(token, (tuple, list, np.ndarray)):
        if len(token) == 0:
            raise ValueError(f"{where}: token is an empty {type(token).__name__} (no word)")
        word = token[0]
    else:
        raise InputTypeError(f"{where}: word {describe(token)} is not a string (got "
                             f"{type(token).__name__}); a token is a string, a tuple or list "
                             "whose first element is the word, or a dict with key 'word'")
    if isinstance(word, np.str_):
        word = str(word)
    if not isinstance(word, str):
        raise InputTypeError(f"{where}: word {describe(word)} is not a string (got "
                             f"{type(word).__name__})")
    return word


def _check_word(word):
    """What is wrong with a word, or None."""
    if not word:
        return "word is empty"
    if len(word) > MAX_WORD_LENGTH:
        return (f"word of {len(word)} characters is longer than {MAX_WORD_LENGTH} "
                f"(starts {word[:20]!r})")
    for ch, name in _FORBIDDEN.items():
        if ch in word:
            return f"word {describe(word)} contains {name}, which the paths file cannot hold"
    try:
        word.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"word {describe(word)} has character {word[exc.start]!r} (a lone surrogate), "
                "which cannot be written as UTF-8")
    return None


def _read_corpus(X, name="X"):
    """The sentences of ``X`` as (tokens per sentence, words per sentence),
    every word checked; errors name the sentence and token."""
    X = check_sentence_list(X, name, "sentences (sequences of tokens)", item_ndim=1,
                            allow_empty=True, sized=False)
    sentences, words = [], []
    for i, sentence in enumerate(X):
        tokens = check_sentence(sentence, f"{name}[{i}]", "tokens", allow_empty=True)
        sentences.append(tokens)
        words.append([_word_of(t, f"{name}[{i}][{j}]") for j, t in enumerate(tokens)])
    # each distinct word is checked once; an error names its first place
    bad = {}
    for w in set().union(*words) if words else ():
        problem = _check_word(w)
        if problem is not None:
            bad[w] = problem
    if bad:
        for i, ws in enumerate(words):
            for j, w in enumerate(ws):
                if w in bad:
                    raise ValueError(f"{name}[{i}][{j}]: {bad[w]}")
    return sentences, words


def _count(words, min_count):
    """Vocabulary by decreasing count, ties by first occurrence; each
    token's rank in it (-1 below ``min_count``); the sentence starts."""
    index = {}
    flat = [index.setdefault(w, len(index)) for ws in words for w in ws]
    first = np.fromiter(flat, dtype=np.int64, count=len(flat))
    counts = np.bincount(first, minlength=len(index)).astype(np.int64)
    order = np.lexsort((np.arange(len(index)), -counts))
    order = order[counts[order] >= min_count]
    rank = np.full(len(index), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    names = list(index)
    vocabulary = [names[k] for k in order.tolist()]
    lengths = np.array([len(ws) for ws in words], dtype=np.int64)
    return vocabulary, counts[order], rank[first], lengths


def _within(lengths, n_tokens):
    """Mask of the adjacent token pairs (k, k + 1) within one sentence."""
    starts = np.cumsum(lengths)[:-1]
    crossing = np.zeros(max(n_tokens - 1, 0), dtype=bool)
    crossing[starts[(starts > 0) & (starts < n_tokens)] - 1] = True
    return ~crossing


def _bigrams(ranks, lengths, n_words):
    """Counts of adjacent pairs of clustered words within sentences, as right
    and left CSR tables; and B, the number of adjacent pairs (all words)."""
    a, b = ranks[:-1], ranks[1:]
    within = _within(lengths, len(ranks))
    keep = within & (a >= 0) & (b >= 0)
    codes, cnt = np.unique(a[keep] * n_words + b[keep], return_counts=True)
    left, right = codes // n_words, codes % n_words
    tables = []
    for key, other in ((left, right), (right, left)):
        order = np.lexsort((other, key))
        ptr = np.zeros(n_words + 1, dtype=np.int64)
        np.cumsum(np.bincount(key, minlength=n_words), out=ptr[1:])
        tables += [ptr, np.ascontiguousarray(other[order], dtype=np.intc),
                   np.ascontiguousarray(cnt[order], dtype=np.int64)]
    return tables, int(np.count_nonzero(within))


def _average_mutual_information(cluster_of, lengths):
    """AMI (bits) of a partition under :class:`BrownClusters`' model, from
    scratch: ``cluster_of`` gives each token's cluster (-1: not clustered),
    ``lengths`` the sentence lengths.  For checks and benchmarks."""
    cluster_of = np.asarray(cluster_of, dtype=np.int64)
    n_tokens = len(cluster_of)
    within = _within(lengths, n_tokens)
    a, b = cluster_of[:-1], cluster_of[1:]
    keep = within & (a >= 0) & (b >= 0)
    n_clusters = int(cluster_of.max()) + 1 if n_tokens else 0
    p1 = np.bincount(cluster_of[cluster_of >= 0], minlength=n_clusters) / n_tokens
    codes, cnt = np.unique(a[keep] * n_clusters + b[keep], return_counts=True)
    p2 = cnt / max(int(np.count_nonzero(within)), 1)
    return float(np.sum(p2 * np.log2(p2 / (p1[codes // n_clusters] * p1[codes % n_clusters]))))


def _row_ranges(n_slots, n_parts):
    """Row ranges of the upper triangle with about equal numbers of pairs."""
    area = np.arange(n_slots, 0, -1, dtype=np.float64).cumsum()
    cuts = np.searchsorted(area, np.linspace(0, area[-1], n_parts + 1)[1:-1])
    bounds = np.unique(np.r_[0, cuts, n_slots]).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def _paths(merges, n_words, n_stage1):
    """Word -> path: 0/1 branches of the merges after the last word was
    added (wcluster prunes the tree below its C clusters: the words of one
    of them share its path)."""
    paths = np.empty(n_words, dtype=object)
    if n_words == 1:
        paths[0] = ""
        return paths
    stack = [(n_words + len(merges) - 1, "")]
    while stack:
        node, path = stack.pop()
        if node < n_words:
            paths[node] = path
            continue
        k = node - n_words
        left, right = int(merges[k, 0]), int(merges[k, 1])
        if k >= n_stage1:
            stack += [(right, path + "1"), (left, path + "0")]
        else:
            stack += [(right, path), (left, path)]
    return paths


class BrownClusters(_SentencesOut, TransformerMixin, BaseEstimator):
    """Brown clusters: a binary hierarchy of words from their bigrams.

    Brown et al. (1992) cluster words so that a class bigram model keeps as
    much average mutual information (AMI) between adjacent classes as it
    can.  This is the windowed algorithm of Liang (2005, ch. 3), the one of
    the ``wcluster`` program: the words are taken by decreasing frequency;
    the first ``n_clusters`` start as one cluster each; every further word
    is added as a cluster of its own and the pair of the ``n_clusters + 1``
    clusters whose merge loses the least AMI is merged; after the last
    word, the clusters are merged down to one.  The losses of all pairs are
    kept in a table updated after each step (O(C^2) per step, less where
    clusters share no bigram), so a run costs O(V C^2) for V words and
    C clusters.  A word's *path* is the string of branches (``0`` the older
    cluster, ``1`` the newer) from the root down to its cluster among the
    ``n_clusters`` formed when the last word was added: as in ``wcluster``,
    the words of one such cluster share its path.

    The model.  With T the number of tokens and B the number of pairs of
    adjacent tokens within a sentence, ``p(c) = count(c) / T`` and
    ``p(c, d) = bigrams(c, d) / B`` (``wcluster``'s normalisation: on a
    corpus given as one sentence B = T - 1 and both programs compute the
    same AMI), and ``AMI = sum over c, d of p(c, d) log2(p(c, d) / (p(c)
    p(d)))`` over the clusters formed so far (the words not yet added are
    not in the model).  Sentences are separate: no bigram crosses a sentence
    boundary (``wcluster`` reads a file as one stream; give it one sentence
    per line ending in its delimiter ``$#$`` for the same bigrams).  Words
    occurring fewer than ``min_count`` times are left out of the clusters
    and of the bigrams, but still count in T and B, as in ``wcluster``.

    Parameters
    ----------
    n_clusters : int, default=1000
        Clusters kept while the words are added (``wcluster``'s ``--c``); a
        vocabulary no larger than this gives every word its own cluster
        and path.  Memory grows as ``32 * n_clusters**2`` bytes.
    min_count : int, default=1
        Words occurring fewer times are not clustered (``--min-occur``).
    n_jobs : int, default=None
        Threads that update the table of losses (joblib's convention; None
        is 1).  The result does not depend on it.
    verbose : int, default=0
        Report progress (words added, AMI, time) every 1000 words (or tenth
        of the vocabulary) when > 0; with 2 or more, also show a progress
        bar of the merges (tqdm's, an optional dependency: without it, the
        lines only, with a warning).  The clusters do not depend on it.

    Attributes
    ----------
    clusters_ : dict of str to str
        Each clustered word's path (a string of ``0`` and ``1``; ``""`` when
        the vocabulary is a single word).
    counts_ : dict of str to int
        Each clustered word's count.
    vocabulary_ : list of str
        The clustered words by decreasing count, ties in order of first
        occurrence in ``X``; word ``i`` is node ``i`` of :attr:`merges_`.
    n_clusters_ : int
        ``min(n_clusters, len(vocabulary_))``: the number of distinct paths.
    mutual_information_ : float
        AMI (bits) of the ``n_clusters_`` clusters right after the last word
        was added and merged: the model whose clusters the paths name
        (``wcluster`` logs it as "Mutual info of C clusters" at the start of
        its stage 2).
    merges_ : ndarray of shape (n_words - 1, 2)
        The merges in order, ``n_words = len(vocabulary_)``: merge ``k`` joins
        nodes ``merges_[k, 0]`` (the 0 branch) and ``merges_[k, 1]`` into
        node ``n_words + k``.
    merge_losses_ : ndarray of shape (n_words - 1,)
        AMI lost by each merge.
    merge_mutual_information_ : ndarray of shape (n_words - 1,)
        AMI of the clusters right after each merge.

    Notes
    -----
    Ties: words of equal count are taken in order of first occurrence;
    merges of equal loss are broken by the table's slot order, which is
    deterministic (``wcluster`` breaks ties the same way, but orders words
    of equal count as its hash table happens to).

    :meth:`transform` appends each token's path as a last column, for
    :class:`SequenceVectorizer` templates such as ``prefix4(col1)`` (words
    without a cluster get :data:`UNKNOWN_PATH`, ``""``).  :meth:`save` and
    :meth:`load` read and write ``wcluster``'s ``paths`` files.

    References
    ----------
    Brown, P. F., deSouza, P. V., Mercer, R. L., Della Pietra, V. J. and
    Lai, J. C. (1992). Class-based n-gram models of natural language.
    *Computational Linguistics*, 18(4), 467-479.

    Liang, P. (2005). *Semi-supervised learning for natural language*.
    Master's thesis, Massachusetts Institute of Technology.

    Examples
    --------
    >>> from sklstruct import BrownClusters
    >>> X = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]]
    >>> brown = BrownClusters(n_clusters=2).fit(X)
    >>> sorted(set(brown.clusters_.values()))
    ['0', '1']
    >>> brown.transform([["the", "emu"]])
    [[('the', '1'), ('emu', '')]]
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, 2**31 - 3, closed="both")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=1000, *, min_count=1, n_jobs=None, verbose=0):
        self.n_clusters = n_clusters
        self.min_count = min_count
        self.n_jobs = n_jobs
        self.verbose = verbose

    @publishes
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Cluster the words of ``X``.

        Parameters
        ----------
        X : iterable of sentences
            A sentence is a sequence of tokens: strings, tuples/lists whose
            first element is the word, or dicts with key ``"word"``.
        y : None
            Ignored.

        Returns
        -------
        self : BrownClusters
        """
        for param in ("n_clusters", "min_count"):
            if isinstance(getattr(self, param), (bool, np.bool_)):
                raise InputTypeError(f"{param}={getattr(self, param)} must be an int, not a bool")
        _, words = _read_corpus(X)
        vocabulary, counts, ranks, lengths = _count(words, self.min_count)
        n_tokens = len(ranks)
        if n_tokens == 0:
            raise ValueError("X: contains no tokens")
        n = len(vocabulary)
        if n == 0:
            raise ValueError(f"X: no word occurs at least min_count={self.min_count} times; "
                             "lower min_count")
        C = min(int(self.n_clusters), n)
        # P, its transpose, the q terms and the losses: four (C+2)^2 tables
        check_alloc("BrownClusters' tables", 4 * 8, C + 2, C + 2,
                    remedy="use a smaller n_clusters")
        tables, n_pairs = _bigrams(ranks, lengths, n)
        kernel = BrownKernel(counts, *tables, C + 2, float(n_tokens), float(max(n_pairs, 1)))
        ami = self._run(kernel, C)
        left, right, losses, amis = kernel.merges()
        merges = np.column_stack([left, right]).astype(np.intp) if n > 1 else \
            np.zeros((0, 2), dtype=np.intp)
        paths = _paths(merges, n, n - C)
        self.vocabulary_ = vocabulary
        self.counts_ = dict(zip(vocabulary, counts.tolist()))
        self.clusters_ = dict(zip(vocabulary, paths.tolist()))
        self.n_clusters_ = C
        self.mutual_information_ = float(ami)
        self.merges_ = merges
        self.merge_losses_ = losses
        self.merge_mutual_information_ = amis
        return self

    def _run(self, kernel, C):
        """The clustering; the AMI of C clusters after the last word."""
        S = C + 2
        k = n_threads(self.n_jobs, S // MIN_ROWS_PER_THREAD)
        n = kernel.n_words
        # verbose >= 2: a bar of the n - 1 merges (one per word added after
        # the first C, then C - 1 down to one cluster), the lines above it
        bar = progress_bar(self.verbose, n - 1, "merges", "BrownClusters")
        if k <= 1 and not self.verbose and bar is None:
            return kernel.run(C)
        # step by step: threads share each step's table update (rows of the
        # upper triangle in ranges of equal area; the best pair is reduced in
        # row order, so any split gives the same result)
        ranges = _row_ranges(S, 4 * k if k > 1 else 1)
        start = time.perf_counter()
        say = print if bar is None else bar.write

        def update():
            run(k, kernel.update_rows, ranges)

        def merge():
            kernel.merge_best()
            update()
            if bar is not None:
                bar.update()

        try:
            kernel.add_initial(C)
            update()
            every = max(1, min(1000, n // 10))
            while kernel.n_added < n:
                kernel.add_word()
                update()
                merge()
                if self.verbose and kernel.n_added % every == 0:
                    say(f"[BrownClusters] {kernel.n_added}/{n} words, AMI {kernel.ami:.6f} "
                        f"bits, {time.perf_counter() - start:.1f} s")
            ami = kernel.ami
            while kernel.n_active > 1:
                merge()
        finally:
            if bar is not None:
                bar.close()
        if self.verbose:
            print(f"[BrownClusters] done: {n} words, {C} clusters, AMI {ami:.6f} bits, "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        return ami

    @reads_model
    def transform(self, X):
        """Append each token's cluster path as a last column.

        Parameters
        ----------
        X : iterable of sentences
            As in :meth:`fit`.

        Returns
        -------
        Xt : list of list
            The sentences, each token ``t`` replaced by ``(word, path)`` if
            ``t`` is a string, ``(*t, path)`` if it is a tuple or list, and
            ``{**t, "brown": path}`` if it is a dict; words without a cluster
            get :data:`UNKNOWN_PATH` (``""``).  With tuples of one column
            ``(word, pos)`` the path is ``col2``: ``prefix4(col2)`` in a
            :class:`SequenceVectorizer` template reads its first 4 bits.
        """
        check_is_fitted(self, "clusters_")
        sentences, words = _read_corpus(X)
        get = self.clusters_.get
        out = []
        for tokens, ws in zip(sentences, words):
            row = []
            for t, w in zip(tokens, ws):
                path = get(w, UNKNOWN_PATH)
                if isinstance(t, str):
                    row.append((t, path))
                elif isinstance(t, Mapping):
                    row.append({**t, "brown": path})
                else:
                    row.append((*t, path))
            out.append(row)
        return out

    # -- wcluster's paths files -----------------------------------------------

    @reads_model
    def save(self, path):
        """Write the clusters as ``wcluster``'s ``paths`` file.

        One line per word, ``path<TAB>word<TAB>count``, in UTF-8, sorted by
        path, then by decreasing count.

        Parameters
        ----------
        path : str or os.PathLike
        """
        check_is_fitted(self, "clusters_")
        counts = self.counts_
        order = sorted(self.clusters_, key=lambda w: (self.clusters_[w], -counts.get(w, 0)))
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for w in order:
                f.write(f"{self.clusters_[w]}\t{w}\t{counts.get(w, 0)}\n")

    @classmethod
    def load(cls, path):
        """Read a ``wcluster`` ``paths`` file (``path<TAB>word<TAB>count``).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        brown : BrownClusters
            With :attr:`clusters_`, :attr:`counts_`, :attr:`vocabulary_` (by
            decreasing count, ties in file order) and :attr:`n_clusters_`
            (the number of distinct paths) set; the
            attributes of the clustering itself (merges, AMI) are not in the
            file.

        Raises
        ------
        ValueError
            Naming the file and line of a malformed line: not three
            tab-separated fields, a path that is not a string of 0 and 1, an
            invalid word, a count that is not a positive integer, a word
            given twice, paths of which one is a prefix of another; or an
            empty file.
        """
        name = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        clusters, counts, first_line = {}, {}, {}
        for n, raw in enumerate(data.split(b"\n"), 1):
            where = f"{name}, line {n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{where}: not UTF-8 text (byte {exc.start})") from None
            line = line[:-1] if line.endswith("\r") else line
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError(f"{where}: expected 'path<TAB>word<TAB>count'; got "
                                 f"{len(fields)} tab-separated field(s) in {describe(line)}")
            bits, word, count = fields
            if bits.strip("01"):
                raise ValueError(f"{where}: path {describe(bits)} is not a string of 0 and 1")
            problem = _check_word(word)
            if problem is not None:
                raise ValueError(f"{where}: {problem}")
            if not (count.isascii() and count.isdigit() and int(count) > 0):
                raise ValueError(f"{where}: count {describe(count)} is not a positive integer")
            if word in clusters:
                raise ValueError(f"{where}: word {describe(word)} is already on line "
                                 f"{first_line[word]}")
            clusters[word], counts[word], first_line[word] = bits, int(count), n
        if not clusters:
            raise ValueError(f"{name}: contains no clusters (empty file)")
        distinct = sorted(set(clusters.values()))
        # sorted, a prefix comes right before the paths it starts
        for a, b in zip(distinct[:-1], distinct[1:]):
            if b.startswith(a):
                word = next(w for w, p in clusters.items() if p == b)
                raise ValueError(f"{name}, line {first_line[word]}: path {b!r} extends path "
                                 f"{a!r} of another cluster: the paths are not the leaves "
                                 "of one tree")
        brown = cls(n_clusters=len(distinct))
        brown.clusters_ = clusters
        brown.counts_ = counts
        brown.vocabulary_ = sorted(clusters, key=lambda w: (-counts[w], first_line[w]))
        brown.n_clusters_ = len(distinct)
        return brown

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        return tags

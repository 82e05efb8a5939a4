"""GazetteerFeatures: the strings of the training chunks (entities), by
type, matched in new sentences (longest match first), cross-fitted on the
training sentences."""
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._publish import reads_model
from ._crossfit import FromLabels, check_window, chunks, offset_name, read_labels
from ._tokens import _Corpus

#: The positions of a token in a matched entry: first, inside, last, single.
POSITIONS = ("B", "I", "E", "S")

#: Longest ``max_length``.
MAX_LENGTH = 1000


def _row_keys(rows):
    """An int key per row of the 2-D int array ``rows`` (values >= 0):
    equal rows, equal keys; different rows, different keys."""
    key = rows[:, 0].astype(np.int64)
    for k in range(1, rows.shape[1]):
        column = rows[:, k].astype(np.int64)
        key = np.unique(key * (int(column.max()) + 1) + column, return_inverse=True)[1]
    return key.ravel()


def _accept_left_first(first, n):
    """Of candidate matches of one length ``n`` starting at the sorted
    ``first`` (none covering a token of another), those a left-to-right
    scan keeps: a candidate overlapping a kept one to its left is dropped."""
    keep = np.zeros(len(first), dtype=bool)
    alive = np.ones(len(first), dtype=bool)
    while alive.any():
        idx = np.flatnonzero(alive)
        s = first[idx]
        free = np.ones(len(idx), dtype=bool)
        free[1:] = s[1:] - s[:-1] >= n          # no live candidate overlaps from the left
        chosen = idx[free]
        keep[chosen] = True
        alive[chosen] = False
        # the live ones overlapping a chosen one (they start within n - 1 after it) go
        live = np.flatnonzero(alive)
        if not live.size:
            break
        before = np.searchsorted(first[chosen], first[live], side="right") - 1
        hit = (before >= 0) & (first[live] - first[chosen][np.maximum(before, 0)] < n)
        alive[live[hit]] = False
    return keep


class GazetteerFeatures(FromLabels):
    """Gazetteer features built from the chunks (entities) of the training labels.

    :meth:`fit` reads the chunks of ``y`` (``B-PER I-PER`` is one ``PER``
    chunk; conlleval's reading, so IOB1, IOB2 and IOBES labels alike) and
    keeps the word string of each, with how often it was a chunk of each
    type: a gazetteer learned from the training set, as the list of
    entities a feature-based NER system looks up.  :meth:`transform` looks
    the entries up in new sentences, longest entries first and left to
    right (a token is in at most one match), and gives each token of a match
    its position in it (``B``, ``I``, ``E``, or ``S`` for a one-word entry)
    for each type the entry had, with the fraction of the entry's training
    occurrences of that type as the value: ``gaz:LOC:B=0.75``,
    ``gaz:ORG:B=0.25`` on "Buenos" of "Buenos Aires".  With ``window``, the
    features of the neighbouring tokens too.

    **Cross-fitting.**  As for :class:`LabelDictionaryFeatures`,
    :meth:`fit_transform` gives each of ``cv`` folds of the training
    sentences the gazetteer of the other folds: with the full one every
    training entity would be found in the gazetteer, which new text's are
    not.  So ``fit(X, y).transform(X)`` (the full gazetteer) differs from
    ``fit_transform(X, y)`` (out of fold); :meth:`transform` of new
    sentences uses the gazetteer of all the training data.

    Parameters
    ----------
    lowercase : bool, default=True
        Match lower-cased words (``"Real Madrid"`` finds ``"REAL MADRID"``).
    max_length : int, default=8
        Longer chunks are not entries.
    min_count : int, default=1
        Entries seen fewer times than this in the (out-of-fold) training
        data are not looked up.
    window : int, default=0
        Also give the features of the tokens up to ``window`` positions
        before and after each token.
    cv : int, default=5
        Folds of the cross-fitting of :meth:`fit_transform` (at least 2).
    shuffle : bool, default=True
        Shuffle the sentences before splitting them into folds.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffling of the folds (with ``shuffle``).

    Attributes
    ----------
    entries_ : dict of tuple of str to dict of str to int
        Each entry's words (lower-cased with ``lowercase``) and how often it
        was a chunk of each type.
    types_ : ndarray of str objects
        The chunk types, in the order of the output columns.
    n_features_out_ : int
        Number of output columns.

    See Also
    --------
    LabelDictionaryFeatures : The labels each word took in training.
    sklstruct.features.feature_set : The rich presets include both.

    Notes
    -----
    Matching is vectorized: for each entry length, the word windows of all
    the positions where one could start are compared with the entries at
    once (their rows reduced to integer keys), then overlapping matches are
    resolved in a few vectorized rounds; no Python loop over tokens.

    References
    ----------
    Ratinov, L. and Roth, D. (2009). Design challenges and misconceptions in
    named entity recognition. In *Proceedings of the Thirteenth Conference
    on Computational Natural Language Learning (CoNLL)*, 147-155.

    Examples
    --------
    >>> from sklstruct.features import GazetteerFeatures
    >>> X = [["New", "York", "is", "big"]]
    >>> y = [["B-LOC", "I-LOC", "O", "O"]]
    >>> gaz = GazetteerFeatures().fit(X, y)
    >>> gaz.entries_
    {('new', 'york'): {'LOC': 1}}
    >>> gaz.transform([["I", "love", "new", "york"]])[0].toarray()
    array([[0., 0., 0., 0.],
           [0., 0., 0., 0.],
           [1., 0., 0., 0.],
           [0., 0., 1., 0.]])
    >>> gaz.get_feature_names_out().tolist()
    ['gaz:LOC:B', 'gaz:LOC:I', 'gaz:LOC:E', 'gaz:LOC:S']
    """

    _parameter_constraints = {
        "lowercase": ["boolean"],
        "max_length": [Interval(Integral, 1, MAX_LENGTH, closed="both")],
        **FromLabels._parameter_constraints,
    }

    def __init__(self, *, lowercase=True, max_length=8, min_count=1, window=0, cv=5,
                 shuffle=True, random_state=None):
        self.lowercase = lowercase
        self.max_length = max_length
        self.min_count = min_count
        self.window = window
        self.cv = cv
        self.shuffle = shuffle
        self.random_state = random_state

    # -- fit ------------------------------------------------------------------------

    def _words(self, X, lowercase):
        """Each token's word id in the distinct (lower-cased) words, those
        words, and the sentence offsets."""
        corpus = _Corpus(X)
        codes, words = corpus.column("word")
        if lowercase:
            words = [w.lower() for w in words]
        # (a dict, not NumPy strings, which would drop trailing NULs)
        index = {}
        remap = np.fromiter((index.setdefault(w, len(index)) for w in words), dtype=np.intp,
                            count=len(words))
        table = np.empty(len(index), dtype=object)
        table[:] = list(index)
        return remap[codes], table, np.asarray(corpus.starts, dtype=np.intp)

    def _fit(self, X, y):
        check_window(self.window)
        ids, table, starts = self._words(X, self.lowercase)
        codes, classes = read_labels(y, np.diff(starts), type(self).__name__)
        first, stop, types, type_names = chunks(codes, classes, starts)
        short = (stop - first) <= self.max_length
        first, stop, types = first[short], stop[short], types[short]
        # the entries: distinct word sequences of the chunks, by length
        length = stop - first
        entry_of_chunk = np.empty(len(first), dtype=np.intp)
        entries = {}            # length -> rows of word ids (in table)
        n_entries = 0
        for n in np.unique(length).tolist():
            which = np.flatnonzero(length == n)
            rows = ids[first[which][:, None] + np.arange(n)]
            key = _row_keys(rows)
            uniq, one, inverse = np.unique(key, return_index=True, return_inverse=True)
            entries[n] = rows[one]
            entry_of_chunk[which] = n_entries + inverse.ravel()
            n_entries += len(uniq)
        used_types, type_col = np.unique(types, return_inverse=True)
        type_col = type_col.ravel()
        counts = sp.csr_matrix((np.ones(len(first)), (entry_of_chunk, type_col)),
                               shape=(n_entries, len(used_types)))
        self.types_ = type_names[used_types].astype(object)
        self._lowercase = bool(self.lowercase)
        self._window = check_window(self.window)
        # the entries' words as their own small vocabulary
        vocab, entry_rows = self._own_vocabulary(entries, table)
        self._vocabulary = vocab
        self._entries = entry_rows
        self._counts = counts
        self.n_features_out_ = (2 * self._window + 1) * len(self.types_) * len(POSITIONS)
        self.entries_ = self._entry_dict()
        sentence_of_chunk = np.searchsorted(starts, first, side="right") - 1
        return (ids, table, starts, entry_of_chunk, type_col, sentence_of_chunk), starts

    @staticmethod
    def _own_vocabulary(entries, table):
        used = np.unique(np.concatenate([r.ravel() for r in entries.values()])) if entries \
            else np.zeros(0, dtype=np.intp)
        vocab = {w: i for i, w in enumerate(table[used].tolist())}
        new_id = np.full(len(table), -1, dtype=np.intp)
        new_id[used] = np.arange(len(used))
        return vocab, {n: new_id[rows] for n, rows in entries.items()}

    def _entry_dict(self):
        words = np.asarray(list(self._vocabulary), dtype=object)
        out = {}
        counts = self._counts.tocsr()
        e = 0
        for n in sorted(self._entries):
            for row in self._entries[n]:
                lo, hi = counts.indptr[e], counts.indptr[e + 1]
                out[tuple(words[row].tolist())] = {
                    str(self.types_[t]): int(c)
                    for t, c in zip(counts.indices[lo:hi].tolist(), counts.data[lo:hi].tolist())}
                e += 1
        return out

    def _out_of_fold(self, state, fold):
        ids, table, starts, entry_of_chunk, type_col, sentence_of_chunk = state
        token_fold = np.repeat(fold, np.diff(starts))
        # token ids in the entries' vocabulary
        get = self._vocabulary.get
        token_ids = np.fromiter((get(w, -1) for w in table.tolist()), dtype=np.intp,
                                count=len(table))[ids]
        parts = []
        for f in range(int(self.cv)):
            in_fold = fold[sentence_of_chunk] == f
            own = sp.csr_matrix((np.ones(int(in_fold.sum())),
                                 (entry_of_chunk[in_fold], type_col[in_fold])),
                                shape=self._counts.shape)
            masked = np.where(token_fold == f, token_ids, -1)
            parts.append(self._match(masked, starts, self._counts - own))
        return sum(parts[1:], parts[0])

    # -- matching -----------------------------------------------------------------------

    def _match(self, token_ids, starts, counts):
        """The features of matching the entries with positive ``counts``
        (total at least min_count) in the tokens (``token_ids``: ids in the
        entries' vocabulary, -1 for other words)."""
        n_tokens = len(token_ids)
        n_types = len(self.types_)
        counts = sp.csr_matrix(counts)
        total = np.asarray(counts.sum(axis=1)).ravel()
        valid_entry = total >= self.min_count
        fractions = (sp.diags(np.where(valid_entry, 1.0 / np.maximum(total, 1), 0.0))
                     @ counts).tocsr()
        sentence = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        bad = np.concatenate([[0], np.cumsum(token_ids < 0)])
        covered = np.zeros(n_tokens + 1, dtype=np.int64)
        rows, cols, vals = [], [], []
        offset = {n: 0 for n in self._entries}
        e0 = 0
        for n in sorted(self._entries):
            offset[n] = e0
            e0 += len(self._entries[n])
        for n in sorted(self._entries, reverse=True):
            E = self._entries[n]
            last = np.arange(n_tokens - n + 1) + n - 1
            if not len(last):
                continue
            begin = last - n + 1
            ok = (bad[last + 1] - bad[begin] == 0) & (sentence[begin] == sentence[last])
            cum = np.concatenate([[0], np.cumsum(covered[:n_tokens])])
            ok &= cum[last + 1] - cum[begin] == 0
            cand = begin[ok]
            if not cand.size:
                continue
            windows = token_ids[cand[:, None] + np.arange(n)]
            keys = _row_keys(np.vstack([E, windows]))
            entry_of_key = np.full(int(keys.max()) + 1, -1, dtype=np.intp)
            entry_of_key[keys[:len(E)]] = np.arange(len(E)) + offset[n]
            entry = entry_of_key[keys[len(E):]]
            hit = entry >= 0
            hit[hit] = valid_entry[entry[hit]]
            cand, entry = cand[hit], entry[hit]
            if not cand.size:
                continue
            keep = _accept_left_first(cand, n)
            cand, entry = cand[keep], entry[keep]
            for k in range(n):
                covered[cand + k] = 1
            block = fractions[entry].tocoo()
            for k in range(n):
                position = 3 if n == 1 else 0 if k == 0 else 2 if k == n - 1 else 1
                rows.append(cand[block.row] + k)
                cols.append(block.col * len(POSITIONS) + position)
                vals.append(block.data)
        if not rows:
            return sp.csr_matrix((n_tokens, n_types * len(POSITIONS)))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))),
                             shape=(n_tokens, n_types * len(POSITIONS)))

    @reads_model
    def transform(self, X):
        """The gazetteer features of every token (the gazetteer of all the
        training data).

        Parameters
        ----------
        X : iterable of sentences

        Returns
        -------
        Xt : StackedSentences
            One float64 CSR row per token: for each offset ``-window ..
            window``, each of :attr:`types_` and each position ``B``, ``I``,
            ``E``, ``S``, the fraction of the matched entry's training
            occurrences of that type (0 where the token is in no match).
        """
        check_is_fitted(self, "entries_")
        ids, table, starts = self._words(X, self._lowercase)
        get = self._vocabulary.get
        new_id = np.fromiter((get(w, -1) for w in table.tolist()), dtype=np.intp,
                             count=len(table))
        return self._output(self._match(new_id[ids], starts, self._counts), starts)

    _fitted_attribute = "entries_"

    def _names_at(self, o):
        """The names of the columns of the token ``o`` positions away."""
        return [f"gaz{offset_name(o)}:{t}:{p}" for t in self.types_ for p in POSITIONS]


__all__ = ["GazetteerFeatures", "POSITIONS"]

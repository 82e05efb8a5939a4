"""Surface features of spans for the parsers (Hall, Durrett and Klein 2014)
and the word classes of rare words.

A constituent over tokens ``[i, j)`` is described by the words at and just
outside its edges, their POS tags, its length and the shape of its
boundaries.  :class:`SpanFeatures` computes these for every span of a
sentence at once, as one sparse row per span; the parser conjoins them with
the label of every node built over the span, so the features decompose over
the nodes of a tree exactly as the grammar rules do and CKY stays exact.

Rare words (fewer than ``min_count`` occurrences in training) are replaced by
their :func:`word_signature`, so unknown words share the statistics of words
that look like them.
"""
import numpy as np
import scipy.sparse as sp

from ..features import word_shape

#: Span templates (see :class:`SpanFeatures`).
TEMPLATES = ("bias", "length", "first_word", "last_word", "word_before", "word_after",
             "first_tag", "last_tag", "tag_before", "tag_after", "first_last_tag",
             "outside_tags", "edge_shapes")

#: Split-point templates (see :class:`SpanFeatures`).
SPLIT_TEMPLATES = ("split_bias", "left_word", "right_word", "left_tag", "right_tag",
                   "split_tags")

#: Upper bounds of the span-length buckets (a span longer than the last one
#: is in the last bucket).
LENGTH_BUCKETS = (1, 2, 3, 4, 5, 7, 10, 15, 20, 30)

# Bases of the conjoined codes: ids of tags (pairs) and edge shapes (four at a
# time) stay below them, so the codes are distinct int64 values; ids beyond
# them count as unseen.
_B2 = 2 ** 30
_B4 = 2 ** 15


def word_signature(word):
    """Class of a rare or unknown word: collapsed shape and last two letters
    (``"Confidence" -> "UNK|Xx|ce"``)."""
    return f"UNK|{word_shape(word)}|{word[-2:].lower()}"


def _edge_shape(word):
    """Coarse class of a word at a span edge: its first character's type
    (``X``, ``x``, ``d``), or the word itself for punctuation."""
    c = word[:1]
    if c.isupper():
        return "X"
    if c.islower():
        return "x"
    if c.isdigit():
        return "d"
    return word if len(word) <= 3 else "o"


class SpanFeatures:
    """Features of every span ``[i, j)`` of a sentence, as rows of a sparse
    matrix indexed by span id ``i * (n + 1) + j``.

    Span templates (values seen in training only; an unseen value fires
    nothing): a bias, the length bucket, the class of the first and last word
    of the span and of the words just before and after it (``<s>``, ``</s>``
    at the sentence edges), the same four POS tags with tagged input, the
    pairs (first tag, last tag) and (tag before, tag after), and the coarse
    shapes of the four edge words together.  Split-point templates, for the
    point between two tokens where a binary node divides its span: a bias,
    the classes of the words on its left and right, their tags and the pair
    of tags.

    Parameters
    ----------
    min_count : int, default=2
        Words seen fewer times in training are replaced by their
        :func:`word_signature` (lower case otherwise).
    """

    def __init__(self, min_count=2):
        self.min_count = min_count

    # -- token classes ---------------------------------------------------------

    def _classes(self, words):
        return [w.lower() if self.counts_.get(w.lower(), 0) >= self.min_count
                else word_signature(w) for w in words]

    def _ids(self, table, values, limit):
        """Ids of ``values`` padded with ``<s>`` (1) and ``</s>`` (2); new
        values get new ids while fitting, else 0 (unseen), as do ids from
        ``limit`` on."""
        if self._growing:
            ids = [table.setdefault(v, len(table) + 3) for v in values]
        else:
            ids = [table.get(v, 0) for v in values]
        out = np.array([1] + ids + [2], dtype=np.int64)
        out[out >= limit] = 0
        return out

    def _codes(self, words, tags):
        """Per template, the integer code of every span of one sentence (rows
        in span order: length, then start), and the span ids."""
        n = len(words)
        W = n + 1
        # padded token arrays: 0 = <s>, 1..n = tokens, n + 1 = </s>
        wc = self._ids(self.word_ids_, self._classes(words), np.iinfo(np.int64).max)
        sh = self._ids(self.shape_ids_, map(_edge_shape, words), _B4)
        i, j = np.triu_indices(W, k=1)
        length = j - i
        codes = {
            "bias": np.zeros(len(i), dtype=np.int64),
            "length": np.searchsorted(LENGTH_BUCKETS, length).astype(np.int64),
            "first_word": wc[i + 1], "last_word": wc[j],
            "word_before": wc[i], "word_after": wc[j + 1],
            "edge_shapes": ((sh[i] * _B4 + sh[i + 1]) * _B4 + sh[j]) * _B4 + sh[j + 1],
        }
        if tags is not None:
            tc = self._ids(self.tag_ids_, tags, _B2)
            codes.update({
                "first_tag": tc[i + 1], "last_tag": tc[j],
                "tag_before": tc[i], "tag_after": tc[j + 1],
                "first_last_tag": tc[i + 1] * _B2 + tc[j],
                "outside_tags": tc[i] * _B2 + tc[j + 1],
            })
        s = np.arange(1, n)     # split points between tokens s - 1 and s
        codes_split = {"split_bias": np.zeros(len(s), dtype=np.int64),
                       "left_word": wc[s], "right_word": wc[s + 1]}
        if tags is not None:
            codes_split.update({"left_tag": tc[s], "right_tag": tc[s + 1],
                                "split_tags": tc[s] * _B2 + tc[s + 1]})
        codes.update(codes_split)
        return codes, i * W + j, s

    # -- fit / transform -------------------------------------------------------

    def fit(self, words_list, tags_list=None):
        """Learn the word classes and the template values seen in
        ``words_list`` (lists of words; ``tags_list``: their POS tags or
        None)."""
        self._fit(words_list, tags_list)
        return self

    def fit_transform(self, words_list, tags_list=None):
        """:meth:`fit`, then :meth:`transform` of the same sentences, their
        codes computed once."""
        return [self._matrices(*c, len(words) + 1)
                for c, words in zip(self._fit(words_list, tags_list), words_list)]

    def _fit(self, words_list, tags_list):
        """Fit; returns every sentence's ``_codes``."""
        counts = {}
        for words in words_list:
            for w in words:
                lw = w.lower()
                counts[lw] = counts.get(lw, 0) + 1
        self.counts_ = counts
        self.word_ids_, self.shape_ids_, self.tag_ids_ = {}, {}, {}
        self.tagged_ = tags_list is not None
        self._growing = True
        seen, all_codes = {}, []
        try:
            for k, words in enumerate(words_list):
                all_codes.append(self._codes(words, tags_list[k] if self.tagged_ else None))
                for name, c in all_codes[-1][0].items():
                    seen.setdefault(name, []).append(np.unique(c))
        finally:
            self._growing = False
        self.values_ = {name: np.unique(np.concatenate(seen[name]))
                        for name in TEMPLATES + SPLIT_TEMPLATES if name in seen}
        self.offsets_ = {}
        self.n_features_ = self.n_split_features_ = 0
        for name, vals in self.values_.items():
            if name in SPLIT_TEMPLATES:
                self.offsets_[name] = self.n_split_features_
                self.n_split_features_ += len(vals)
            else:
                self.offsets_[name] = self.n_features_
                self.n_features_ += len(vals)
        return all_codes

    def transform(self, words_list, tags_list=None):
        """Per sentence, a CSR matrix ``((n + 1) ** 2, n_features_)`` whose row
        ``i * (n + 1) + j`` holds the features of span ``[i, j)`` (rows of
        empty spans ``j <= i`` are empty), and a CSR matrix ``(n + 1,
        n_split_features_)`` whose row ``s`` holds the features of the split
        point between tokens ``s - 1`` and ``s``."""
        if (tags_list is not None) != self.tagged_:
            raise ValueError("tags must be given if and only if they were given in fit")
        return [self._matrices(*self._codes(words, tags_list[k] if self.tagged_ else None),
                               len(words) + 1) for k, words in enumerate(words_list)]

    def _matrices(self, codes, sid, split, W):
        """The span and split-point matrices of one sentence's codes."""
        parts = {False: ([], []), True: ([], [])}
        for name, vals in self.values_.items():
            if not len(vals):
                continue      # a template that fit never saw fire (one-word sentences)
            c = codes[name]
            pos = np.minimum(np.searchsorted(vals, c), len(vals) - 1)
            hit = vals[pos] == c
            is_split = name in SPLIT_TEMPLATES
            rows, cols = parts[is_split]
            cols.append(self.offsets_[name] + pos[hit])
            rows.append((split if is_split else sid)[hit])
        mats = []
        for is_split, shape in ((False, (W * W, self.n_features_)),
                                (True, (W, self.n_split_features_))):
            rows, cols = parts[is_split]
            rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
            cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
            mats.append(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape))
        return tuple(mats)

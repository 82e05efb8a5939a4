"""The pure-Python featurizer of SequenceVectorizer before it was compiled:
the test oracle of sklstruct/features/_featurize.pyx.

:class:`Corpus` reads the tokens in Python and evaluates the template atoms
with NumPy over them (as ``token_features`` still does), and
:func:`fit`, :func:`transform` and :func:`token_features` are the vectorizer's
old methods over it, so that the compiled path can be compared with it on
every template kind (tests/features/test_featurize.py).
"""
from hashlib import blake2b

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import FeatureHasher

from sklstruct._validation import check_sentence, check_sentence_list
from sklstruct.features._templates import _parse_templates
from sklstruct.features._tokens import _Corpus, _factorize, _token_kind


class Corpus(_Corpus):
    """The old token table: the sentences flattened and the columns read and
    interned in Python, word keys hashed one by one.  The atoms and templates
    are evaluated as :class:`sklstruct.features._tokens._Corpus` evaluates
    them for ``token_features`` (the compiled featurizer shares none of it)."""

    def __init__(self, X, boundary="symbol", clusters=None):
        self.boundary = boundary
        self.clusters = clusters     # word (or value) -> bit-string path
        flat, lengths = [], []
        X = check_sentence_list(X, "X", "sentences (sequences of tokens)", item_ndim=1,
                                sized=False)
        for i, sentence in enumerate(X):
            tokens = check_sentence(sentence, f"X[{i}]", "tokens")
            lengths.append(len(tokens))
            flat.extend(tokens)
        self.flat = flat
        self.n_tokens = n = len(flat)
        self.lengths = np.asarray(lengths, dtype=np.intp)
        self.starts = np.zeros(len(lengths) + 1, dtype=np.intp)
        np.cumsum(self.lengths, out=self.starts[1:])
        sentence_of = np.repeat(np.arange(len(lengths)), self.lengths)
        self.position = np.arange(n) - self.starts[:-1][sentence_of]
        self.sentence_length = self.lengths[sentence_of]

        kind_of = {tp: _token_kind(next(t for t in flat if type(t) is tp))
                   for tp in set(map(type, flat))}
        if None in kind_of.values():
            i, tp = next((i, type(t)) for i, t in enumerate(flat)
                         if kind_of[type(t)] is None)
            raise TypeError(
                f"{self._where(i)}: unsupported token type {tp.__name__}; "
                "expected a str, a tuple/list of str or a dict of str"
            )
        kinds = set(kind_of.values())
        self.kind = kinds.pop() if len(kinds) == 1 else "mixed"
        self._columns = {}
        self._bases = {}
        self._valid = {}

    def column(self, column):
        """Codes and distinct values of a column over all tokens."""
        if column in self._columns:
            return self._columns[column]
        get, seq_key, dict_key = self._getter(column)
        flat = self.flat
        try:
            if self.kind == "str" and column == "word":
                values = flat
            elif self.kind == "seq" and seq_key is not None:
                values = [t[seq_key] for t in flat]
            elif self.kind == "dict" and dict_key is not None:
                values = [t[dict_key] for t in flat]
            else:
                values = [get(t) for t in flat]
            ok = all(issubclass(tp, str) for tp in set(map(type, values)))
        except (KeyError, IndexError, TypeError):
            ok = False
        if not ok:
            self._raise_column_error(get, column)
        result = self._columns[column] = _factorize(values)
        return result

    def word_keys(self):
        """A stable 64-bit key of every token's word (the same word, the same
        key, in any process), or None when the tokens have no word column."""
        try:
            codes, words = self.column("word")
        except (ValueError, TypeError):
            return None
        keys = np.fromiter(
            (int.from_bytes(blake2b(w.encode("utf-8", "surrogatepass"), digest_size=8)
                            .digest(), "little", signed=True) for w in words),
            dtype=np.int64, count=len(words))
        return keys[codes]


def _lookup(names, vocabulary, n_out, hashing):
    if hashing:
        hasher = FeatureHasher(n_out, input_type="string", alternate_sign=False)
        return hasher.transform(
            [name.encode("utf-8", "surrogatepass")] for name in names
        ).indices
    return np.fromiter((vocabulary.get(n, -1) for n in names), dtype=np.intp,
                       count=len(names))


def fit(X, templates, window=0, min_freq=1, hashing=False, n_features=2**20,
        boundary="symbol", clusters=None):
    """(instances, vocabulary or None, n_features_out) as the old fit."""
    instances = _parse_templates(templates, window)
    corpus = Corpus(X, boundary, clusters)
    if hashing:
        return instances, None, n_features
    columns = [corpus.template(name, atoms) for name, atoms in instances]
    counts = {}
    for codes, names, mask in columns:
        freq = np.bincount(codes if mask is None else codes[mask], minlength=len(names))
        for i in np.flatnonzero(freq).tolist():
            counts[names[i]] = counts.get(names[i], 0) + int(freq[i])
    kept = sorted(counts if min_freq == 1
                  else (n for n, c in counts.items() if c >= min_freq))
    if not kept:
        raise ValueError("empty vocabulary")
    return instances, dict(zip(kept, range(len(kept)))), len(kept)


def transform(X, instances, vocabulary, n_out, hashing, boundary="symbol", clusters=None):
    """(matrix, offsets, keys) as the old transform."""
    corpus = Corpus(X, boundary, clusters)
    columns = [corpus.template(name, atoms) for name, atoms in instances]
    table = np.empty((corpus.n_tokens, len(columns)), dtype=np.int32)
    for j, (codes, names, mask) in enumerate(columns):
        col = _lookup(names, vocabulary, n_out, hashing).astype(np.int32)[codes]
        if mask is not None:
            col[~mask] = -1
        table[:, j] = col
    table.sort(axis=1)
    present = table >= 0
    indptr = np.zeros(corpus.n_tokens + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=indptr[1:])
    matrix = sp.csr_matrix((np.ones(int(indptr[-1])), table[present], indptr),
                           shape=(corpus.n_tokens, n_out))
    matrix.sum_duplicates()
    return matrix, corpus.starts.astype(np.int64), corpus.word_keys()


def token_features(X, instances, boundary="symbol", clusters=None):
    """Feature names of every token, as the old token_features."""
    corpus = Corpus(X, boundary, clusters)
    per_template = []
    for name, atoms in instances:
        codes, names, mask = corpus.template(name, atoms)
        values = np.array(names, dtype=object)[codes]
        if mask is not None:
            values[~mask] = None
        per_template.append(values.tolist())
    flat = [[f for f in row if f is not None] for row in zip(*per_template)]
    starts = corpus.starts.tolist()
    return [flat[a:b] for a, b in zip(starts[:-1], starts[1:])]

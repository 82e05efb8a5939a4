"""The pure-Python featurizer of SequenceVectorizer before it was compiled:
the test oracle of sklstruct/features/_featurize.pyx.

:class:`Corpus` evaluates the template atoms with NumPy over a corpus, and
:func:`fit`, :func:`transform` and :func:`token_features` are the vectorizer's
old methods over it, so that the compiled path can be compared with it on
every template kind (tests/features/test_featurize.py).
"""
from collections.abc import Mapping
from hashlib import blake2b

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import FeatureHasher

from sklstruct._validation import check_sentence, check_sentence_list, describe
from sklstruct.features._templates import _parse_templates
from sklstruct.features._tokens import _DERIVED, _FLAGS, _POSITION_FLAGS, BOS, EOS

def _token_kind(token):
    if isinstance(token, str):
        return "str"
    if isinstance(token, Mapping):
        return "dict"
    if isinstance(token, (tuple, list, np.ndarray)):
        return "seq"
    return None


def _join_values(values):
    r"""Value part of a conjunction's feature name: the values joined by ``|``.

    When a value contains ``|``, every value is escaped (``\`` becomes
    ``\\`` and ``|`` becomes ``\|``), so that two different tuples never
    share a name: a name of ``|``-free values has exactly ``len(values) - 1``
    bars and splits one way only; an escaped name has more bars than that and
    decodes one way only.  Names of ``|``-free values are left as they are.
    """
    if any("|" in v for v in values):
        values = [v.replace("\\", "\\\\").replace("|", "\\|") for v in values]
    return "|".join(values)


def _factorize(values):
    """Integer codes and the list of distinct values, in order of appearance."""
    uniques = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(uniques)}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.intp,
                        count=len(values))
    return codes, uniques


class Corpus:
    """All tokens of ``X`` flattened, with the helpers the templates need."""

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

    def _where(self, i):
        s = int(np.searchsorted(self.starts, i, side="right")) - 1
        return f"X[{s}], token {i - self.starts[s]}"

    @staticmethod
    def _getter(column):
        """Function reading ``column`` from any token, and its seq/dict keys."""
        if column.startswith("col:"):
            seq_key, dict_key = None, column[4:]
        elif column.startswith("col"):
            seq_key, dict_key = int(column[3:]), None  # dicts have no positions
        else:
            seq_key, dict_key = ("word", "pos").index(column), column

        def get(token):
            if isinstance(token, str):
                if column != "word":
                    raise KeyError(column)
                return token
            key = dict_key if isinstance(token, Mapping) else seq_key
            if key is None:
                raise KeyError(column)
            return token[key]

        return get, seq_key, dict_key

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

    def _raise_column_error(self, get, column):
        for i, token in enumerate(self.flat):
            try:
                value = get(token)
            except (KeyError, IndexError, TypeError):
                raise ValueError(
                    f"{self._where(i)}: no column {column!r} in {describe(token)}"
                ) from None
            if not isinstance(value, str):
                raise TypeError(
                    f"{self._where(i)}: the value of column {column!r} must be "
                    f"a string; got {describe(value)} ({type(value).__name__})"
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def base(self, kind, arg, base_name, column):
        """Unshifted values of an atom: ``(codes, table)`` or a boolean mask."""
        if base_name in self._bases:
            return self._bases[base_name]
        if arg in _POSITION_FLAGS:
            result = self._bases[base_name] = (
                self.position == 0 if arg == "is_first"
                else self.position == self.sentence_length - 1)
            return result
        codes, table = self.column(column)
        if kind == "flag":
            func = _FLAGS[arg]
            result = np.fromiter(map(func, table), dtype=bool, count=len(table))[
                codes
            ]
        elif kind == "column":
            result = codes, table
        else:
            if isinstance(arg, tuple) and arg[0] == "cluster":
                result = _cluster_codes(codes, table, self.clusters, arg[1])
                self._bases[base_name] = result
                return result
            if isinstance(arg, tuple):
                side, n = arg
                derived = [v[:n] for v in table] if side == "prefix" else [
                    v[-n:] for v in table
                ]
            else:
                derived = list(map(_DERIVED[arg], table))
            remap, table = _factorize(derived)
            result = remap[codes], table
        self._bases[base_name] = result
        return result

    def valid(self, offset):
        """Tokens whose neighbour at ``offset`` lies inside the sentence."""
        if offset not in self._valid:
            p = self.position + offset
            self._valid[offset] = (p >= 0) & (p < self.sentence_length)
        return self._valid[offset]

    def atom(self, kind, arg, base_name, column, offset):
        """``(codes, table, mask)`` of an atom at ``offset``; mask may be None."""
        n = self.n_tokens
        if kind == "bias":
            return np.zeros(n, dtype=np.intp), [""], None
        base = self.base(kind, arg, base_name, column)
        if offset != 0:
            valid = self.valid(offset)
            source = np.clip(np.arange(n) + offset, 0, n - 1)
        if kind == "flag":
            mask = base if offset == 0 else valid & base[source]
            return np.zeros(n, dtype=np.intp), ["1"], mask
        codes, table = base
        if offset == 0:
            codes, mask = codes, None
        elif self.boundary == "skip":
            codes, mask = np.where(valid, codes[source], 0), valid
        else:
            codes, mask = np.where(valid, codes[source], len(table)), None
            table = table + [BOS if offset < 0 else EOS]
        if kind == "derived" and isinstance(arg, tuple) and arg[0] == "cluster":
            # a word without a path (code -1) gives no feature
            has = codes >= 0
            mask = has if mask is None else mask & has
            codes = np.where(has, codes, 0)
            # (no value with a path: a placeholder that the mask never shows)
            table = table or [""]
        return codes, table, mask

    def template(self, name, atoms):
        """``(codes, names, mask)`` of a template instance.

        ``names[codes[t]]`` is the feature of token ``t``, which fires where
        ``mask`` is true (everywhere when ``mask`` is None).
        """
        codes, table, mask = self.atom(*atoms[0])
        if len(atoms) > 1:
            table = [(v,) for v in table]
        for atom in atoms[1:]:
            codes_b, table_b, mask_b = self.atom(*atom)
            nb = len(table_b)
            combined = codes.astype(np.int64) * nb + codes_b
            uniq, codes = np.unique(combined, return_inverse=True)
            codes = codes.reshape(-1)
            qa, rb = np.divmod(uniq, nb)
            table = [
                table[i] + (table_b[j],) for i, j in zip(qa.tolist(), rb.tolist())
            ]
            if mask_b is not None:
                mask = mask_b if mask is None else mask & mask_b
        if len(atoms) > 1:
            table = list(map(_join_values, table))
        if all(a[0] in ("flag", "bias") for a in atoms):
            names = [name] * len(table)
        else:
            prefix = name + "="
            names = [prefix + v for v in table]
        return codes, names, mask


def _cluster_codes(codes, table, clusters, n):
    """``(codes, table)`` of the atom ``clusterN``: the first ``n`` bits of
    each value's path; code -1 where the value has no path (no feature, as a
    flag that does not fire)."""
    get = (clusters or {}).get
    paths = [get(v) for v in table]
    have = [i for i, p in enumerate(paths) if p is not None]
    remap, values = _factorize([paths[i][:n] for i in have])
    full = np.full(len(table) + 1, -1, dtype=np.intp)   # (codes[-1] stays -1)
    full[have] = remap
    return full[codes], values


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

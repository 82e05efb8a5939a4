"""The token table: every token of a corpus in one flat list, and the
values the template atoms read from it.

:class:`_Corpus` flattens the sentences, reads each column once, gives every
distinct value an integer code, and evaluates atoms (a column, a derived
value such as :func:`word_shape`, a flag) at any offset as arrays of codes
over all tokens, so that a template costs a few numpy operations rather than
a Python loop over tokens.  The atom vocabulary (``_FLAGS``, ``_DERIVED``,
``_POSITION_FLAGS``) lives here, next to the code that evaluates it; the
template parser (``_templates``) reads its names.
"""
from collections.abc import Mapping
from hashlib import blake2b
from functools import cached_property
from itertools import groupby
import unicodedata

import numpy as np

from .._validation import check_sentence, check_sentence_list, describe
from ._columns import flatten, read_columns, word_keys as _word_keys_of
from ._featurize import Program

BOS = "__BOS__"
"""Value of a column atom that points before the start of the sentence."""

EOS = "__EOS__"
"""Value of a column atom that points after the end of the sentence."""


def _is_punct(s):
    return bool(s) and not any(c.isalnum() or c.isspace() for c in s)


_FLAGS = {
    "is_title": str.istitle,
    "is_upper": str.isupper,
    "is_lower": str.islower,
    "is_digit": str.isdigit,
    "has_digit": lambda s: any(c.isdigit() for c in s),
    "has_hyphen": lambda s: "-" in s,
    "has_dot": lambda s: "." in s,
    "is_punct": _is_punct,
    "title_dot": lambda s: s[:1].isupper() and "." in s,
    "first_upper": lambda s: s[:1].isupper(),
    "first_lower": lambda s: s[:1].islower(),
    "first_alnum": lambda s: s[:1].isalnum(),
}

_SHAPE_TABLE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "X" * 26 + "x" * 26 + "d" * 10,
)


def word_shape(s):
    """Collapsed shape of a word.

    Upper-case letters become ``X``, lower-case letters ``x``, digits ``d``;
    other characters are kept; then every run of one symbol is collapsed to
    one.  This is the ``shape`` atom of the feature templates, and the word
    class of unknown words in :mod:`sklstruct.parsing`.  Letters of scripts
    without case (Han, Arabic, Devanagari...) are ``x``, as in spaCy's
    ``Token.shape_``, and the shape does not depend on the Unicode
    normalization form (see :func:`long_shape`).

    Parameters
    ----------
    s : str
        The word.

    Returns
    -------
    shape : str
        Its collapsed shape.

    Examples
    --------
    >>> from sklstruct.features import word_shape
    >>> [word_shape(w) for w in ["Confidence", "U.S.", "1,000", "well-known", "東京都"]]
    ['Xx', 'X.X.', 'd,d', 'x-x', 'x']
    """
    return "".join([c for c, _ in groupby(long_shape(s))])


def _char_shape(c):
    if c.isupper() or c.istitle():
        return "X"
    if c.islower() or c.isalpha():
        # a letter without case (Han, kana, Arabic...) is a letter, not its
        # own class: else the shape of a caseless word is the word itself
        return "x"
    if c.isdigit():
        return "d"
    # a combining mark belongs to the letter before it (NFD "e" + U+0301 is
    # the "é" of NFC)
    return "" if unicodedata.category(c)[0] == "M" else c


def long_shape(s):
    """Shape of a word, runs not collapsed (the ``long_shape`` atom):
    ``Confidence -> Xxxxxxxxxx``, ``1,000 -> d,ddd``; :func:`word_shape`
    collapses it.  A word is read in its NFC form with its remaining
    combining marks dropped, so that its NFC and NFD spellings have one
    shape."""
    if s.isascii():
        return s.translate(_SHAPE_TABLE)
    return "".join(map(_char_shape, unicodedata.normalize("NFC", s)))


_DERIVED = {"lower": str.lower, "shape": word_shape, "long_shape": long_shape}

#: Flags of a token's place in its sentence (they read no column).
_POSITION_FLAGS = ("is_first", "is_last")

# ---------------------------------------------------------------------------
# Corpus: flat token arrays and per-template value codes
# ---------------------------------------------------------------------------


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


#: The key of each word met lately (:func:`_word_key`): hashing a word costs
#: more than looking it up, and a test set meets the same words again.
_WORD_KEYS = {}
_WORD_KEYS_MAX = 1 << 20


def _word_key(word):
    """The stable 64-bit key of a word (blake2b of its UTF-8 bytes)."""
    key = _WORD_KEYS.get(word)
    if key is None:
        key = int.from_bytes(blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8)
                             .digest(), "little", signed=True)
        if len(_WORD_KEYS) >= _WORD_KEYS_MAX:
            _WORD_KEYS.clear()
        # a str subclass (np.str_) is keyed by its value, as dicts do
        _WORD_KEYS[word] = key
    return key


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


def _factorize(values):
    """Integer codes and the list of distinct values, in order of appearance."""
    uniques = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(uniques)}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.intp,
                        count=len(values))
    return codes, uniques


def columns_read(instances):
    """The token columns the atoms of template ``instances`` read, in the
    atoms' order (``_Corpus(..., columns=)``, :meth:`_Corpus.read`)."""
    return list(dict.fromkeys(column for _, atoms in instances
                              for kind, arg, _, column, _ in atoms
                              if kind != "bias" and arg not in _POSITION_FLAGS))


class _Corpus:
    """All tokens of ``X`` flattened, with the helpers the templates need."""

    def __init__(self, X, boundary="symbol", clusters=None, columns=()):
        self.boundary = boundary
        self.clusters = clusters     # word (or value) -> bit-string path
        X = check_sentence_list(X, "X", "sentences (sequences of tokens)", item_ndim=1,
                                sized=False)
        # one compiled pass: the per-sentence and per-token Python work here
        # was a sixth of transform
        # (``columns``, the columns the caller will read: read in the same
        # pass when the tokens are tuples)
        keys = [self._getter(c)[1] for c in dict.fromkeys(columns)]
        flat, self.lengths, types, read = flatten(
            X, check_sentence, None if None in keys else keys)
        self.flat = flat
        self.n_tokens = len(flat)
        self.starts = np.zeros(len(self.lengths) + 1, dtype=np.intp)
        np.cumsum(self.lengths, out=self.starts[1:])

        kind_of = {tp: _token_kind(next(t for t in flat if type(t) is tp))
                   for tp in types}
        if None in kind_of.values():
            i, tp = next((i, type(t)) for i, t in enumerate(flat)
                         if kind_of[type(t)] is None)
            raise TypeError(
                f"{self._where(i)}: unsupported token type {tp.__name__}; "
                "expected a str, a tuple/list of str or a dict of str"
            )
        kinds = set(kind_of.values())
        self.kind = kinds.pop() if len(kinds) == 1 else "mixed"
        self._columns = {} if read is None else dict(zip(dict.fromkeys(columns), read))
        self._bases = {}
        self._valid = {}

    @cached_property
    def position(self):
        """Each token's position in its sentence (position flags, and the
        Python evaluation of :meth:`template`; the compiled path needs none)."""
        sentence_of = np.repeat(np.arange(len(self.lengths)), self.lengths)
        return np.arange(self.n_tokens) - self.starts[:-1][sentence_of]

    @cached_property
    def sentence_length(self):
        """Each token's sentence length."""
        return np.repeat(self.lengths, self.lengths)

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
        if column not in self._columns:
            self.read(column)
        return self._columns[column]

    def read(self, *columns):
        """Read the ``columns`` not read yet (:meth:`column` then finds them),
        all in one pass over the tokens (:func:`._columns.read_columns`)."""
        columns = [c for c in dict.fromkeys(columns) if c not in self._columns]
        if not columns:
            return
        getters = [self._getter(c) for c in columns]
        if self.kind == "str" and columns == ["word"]:
            mode, keys = 0, [None]
        elif self.kind == "seq" and all(g[1] is not None for g in getters):
            mode, keys = 1, [g[1] for g in getters]
        elif self.kind == "dict" and all(g[2] is not None for g in getters):
            mode, keys = 2, [g[2] for g in getters]
        else:
            mode, keys = 3, [None] * len(columns)
        result = read_columns(self.flat, mode, keys, [g[0] for g in getters])
        if result is None:
            for c, g in zip(columns, getters):
                self._raise_column_error(g[0], c)
            raise AssertionError("unreachable")  # pragma: no cover
        self._columns.update(zip(columns, result))

    def word_keys(self):
        """A stable 64-bit key of every token's word (the same word, the same
        key, in any process), or None when the tokens have no word column."""
        try:
            codes, words = self.column("word")
        except (ValueError, TypeError):
            return None
        return _word_keys_of(words, _WORD_KEYS, _word_key)[codes]

    def deferred_word_keys(self):
        """:meth:`word_keys` as a function to call when they are read
        (:attr:`sklstruct.chain.StackedSentences.keys`), holding the word
        column's codes and distinct words only; computed now (the function
        returns them) when the templates did not read the word column."""
        column = self._columns.get("word")
        if column is None:
            keys = self.word_keys()
            return lambda: keys
        codes, words = column
        return lambda: _word_keys_of(words, _WORD_KEYS, _word_key)[codes]

    def _raise_column_error(self, get, column):
        """The error of the first token without a string in ``column``, if any."""
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

    def program(self, instances, index=None):
        """The template instances over this corpus as the compiled featurizer
        reads them (:class:`._featurize.Program`): the atoms' value tables
        (codes per token, UTF-8 values) and flag masks, evaluated here on the
        distinct values of each column.  With ``index``, a
        :class:`._fitted_index.FittedIndex` of the same instances, the value
        tables are the fitted ones and the instances have their lookups."""
        tables, masks = {}, {}
        codes, mask_arrays, values = [], [], []
        # every column the atoms read, in one pass (in the atoms' order: the
        # first missing one is the one named)
        self.read(*columns_read(instances))
        kinds, sources, offsets, bounds, prefixes, has_values = [], [], [], [0], [], []
        for name, atoms in instances:
            for kind, arg, base_name, column, offset in atoms:
                if kind == "bias":
                    kinds.append(2)
                    sources.append(0)
                elif kind == "flag":
                    if base_name not in masks:
                        masks[base_name] = len(mask_arrays)
                        mask_arrays.append(self.base(kind, arg, base_name, column))
                    kinds.append(1)
                    sources.append(masks[base_name])
                else:
                    if base_name not in tables:
                        tables[base_name] = len(codes)
                        c, table = self.base(kind, arg, base_name, column)
                        if index is not None:
                            c = index.codes(index.tables[len(codes)], c, table)
                        codes.append(c)
                        values.append(table)
                    kinds.append(0)
                    sources.append(tables[base_name])
                offsets.append(offset)
            bounds.append(len(kinds))
            named = not all(a[0] in ("flag", "bias") for a in atoms)
            prefixes.append((name + "=" if named else name).encode("utf-8", "surrogatepass"))
            has_values.append(named)
        n = self.n_tokens
        if index is None:
            encoded, bars, sizes = [], [], []
            for table in values:
                encoded += [v.encode("utf-8", "surrogatepass") for v in table]
                encoded += [_BOS_BYTES, _EOS_BYTES]
                bars += ["|" in v for v in table] + [False, False]
                sizes.append(len(table))
            sizes = np.asarray(sizes, dtype=np.int64)
            blob, value_offs = b"".join(encoded), _offsets(map(len, encoded), len(encoded))
            table_base = _offsets(sizes[:-1] + 2, len(sizes) - 1)[:len(sizes)]
            radix, bos, eos = sizes + 2, sizes, sizes + 1
            bars = np.asarray(bars, dtype=np.uint8)
            lookups = order = None
            # what fit's index is built from (FittedIndex.from_counts)
            self.value_tables = values, dict(blob=blob, value_offs=value_offs,
                                             base=table_base, radix=radix, bars=bars)
        else:
            blob, value_offs, table_base = index.blob, index.value_offs, index.table_base
            radix, bos, eos = index.table_radix, index.table_bos, index.table_eos
            bars, lookups = index.bars, index.lookups
            order = index.order
        return Program(
            self.starts.astype(np.int64),
            np.stack(codes).astype(np.intp, copy=False) if codes
            else np.zeros((0, n), dtype=np.intp),
            np.stack(mask_arrays).view(np.uint8) if mask_arrays
            else np.zeros((0, n), dtype=np.uint8),
            dict(blob=blob, value_offs=value_offs, base=table_base, radix=radix, bos=bos,
                 eos=eos, bars=bars),
            dict(atoms=np.asarray(bounds, dtype=np.int64), prefix_blob=b"".join(prefixes),
                 prefix_offs=_offsets(map(len, prefixes), len(prefixes)),
                 has_values=np.asarray(has_values, dtype=np.uint8),
                 kind=np.asarray(kinds, dtype=np.int64), src=np.asarray(sources, dtype=np.int64),
                 off=np.asarray(offsets, dtype=np.int64)),
            self.boundary == "skip", lookups, order,
        )


_BOS_BYTES = BOS.encode()
_EOS_BYTES = EOS.encode()


def _offsets(lengths, count):
    """Cumulative sums of ``count`` lengths, from 0 (``count + 1`` values)."""
    out = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=count), out=out[1:])
    return out

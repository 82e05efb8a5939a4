"""The vocabulary of a fitted :class:`SequenceVectorizer` as the compiled
featurizer reads it: value tables and, per template instance, a lookup from
the codes of its atoms' values to the column.

Why: looking each distinct feature name of a test set up in the vocabulary
(one random access into hundreds of thousands of names, and the comparison of
its bytes) costs more than everything else transform does.  A feature is in
the vocabulary only if each of its values is among the values the vocabulary
names hold for that atom, and its values determine its name (the escaping of
``_join_values`` makes that one to one), so the vocabulary is read once into

* one table per atom base (``word``, ``suffix3(pos)``, ...): the values its
  names hold, with ``__BOS__`` and ``__EOS__``;
* per template instance, the mixed-radix key of each of its features (the
  codes of its values in those tables) and its column
  (:class:`._featurize.InstanceLookup`).

transform then maps each distinct value of the test set to its code (a dict
lookup per distinct value, not per token) and finds every token's feature by
its key.  The index is built from ``vocabulary_`` alone (names that no
template instance gives are ignored), so it is the same after fit, after
unpickling, or for a vocabulary set by hand.  Instances whose key space
would pass 2**62 get no lookup: their names are built and found in the name
table, as with the per-block caches (``_featurize``).
"""
from itertools import repeat

import numpy as np

from ._featurize import InstanceLookup
from ._tokens import BOS, EOS, _join_values

_KEY_LIMIT = 1 << 62


def _split(tail, n):
    """The ``n`` values of a conjunction's value part, or None when no tuple
    of values gives it."""
    values = tail.split("|")
    if len(values) == n:
        return values
    values, current, i = [], [], 0
    while i < len(tail):
        c = tail[i]
        if c == "\\" and i + 1 < len(tail):
            current.append(tail[i + 1])
            i += 2
            continue
        if c == "|":
            values.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    values.append("".join(current))
    if len(values) != n or _join_values(values) != tail:
        return None
    return values


class FittedIndex:
    """Value tables and per-instance lookups of a vocabulary (see the module)."""

    def __init__(self, instances, vocabulary):
        bases = {}                      # base name -> {value: code}
        atom_tables = []
        named, flag_only = {}, {}
        for i, (name, atoms) in enumerate(instances):
            tabs = []
            for kind, _, base_name, _, _ in atoms:
                tabs.append(None if kind in ("flag", "bias")
                            else bases.setdefault(base_name, {}))
            atom_tables.append(tabs)
            if all(t is None for t in tabs):
                flag_only[name] = i
            else:
                named[name] = i
        entries = [[] for _ in instances]
        columns = [[] for _ in instances]
        for feature, column in vocabulary.items():
            head, sep, tail = feature.partition("=")
            if not sep:
                i = flag_only.get(feature)
                if i is not None:
                    entries[i].extend([0] * len(atom_tables[i]))
                    columns[i].append(column)
                continue
            i = named.get(head)
            if i is None:
                continue
            tabs = atom_tables[i]
            values = [tail] if len(tabs) == 1 else _split(tail, len(tabs))
            if values is None:
                continue
            codes = []
            for table, value in zip(tabs, values):
                if table is None:
                    if value != "1":
                        break
                    codes.append(0)
                else:
                    codes.append(table.setdefault(value, len(table)))
            else:
                entries[i].extend(codes)
                columns[i].append(column)
        for table in bases.values():
            table.setdefault(BOS, len(table))
            table.setdefault(EOS, len(table))
        self.bases = list(bases)
        self.tables = list(bases.values())
        radix = np.array([len(t) for t in self.tables], dtype=np.int64)
        self.table_radix = radix
        self.table_bos = np.array([t[BOS] for t in self.tables], dtype=np.int64)
        self.table_eos = np.array([t[EOS] for t in self.tables], dtype=np.int64)
        self.table_base = np.zeros(len(radix), dtype=np.int64)
        np.cumsum(radix[:-1], out=self.table_base[1:])
        encoded = [v.encode("utf-8", "surrogatepass") for t in self.tables for v in t]
        self.blob = b"".join(encoded)
        self.value_offs = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)),
                  out=self.value_offs[1:])
        self.bars = np.fromiter(("|" in v for t in self.tables for v in t), dtype=np.uint8,
                                count=len(encoded))
        self.lookups = []
        for tabs, codes, cols in zip(atom_tables, entries, columns):
            radices = [1 if t is None else len(t) for t in tabs]
            n_keys = 1
            for r in radices:
                n_keys *= r
            if n_keys >= _KEY_LIMIT:
                self.lookups.append(None)
                continue
            codes = np.array(codes, dtype=np.uint64).reshape(len(cols), len(tabs))
            # (codes: the flat list of each feature's codes, atom after atom)
            keys = np.zeros(len(cols), dtype=np.uint64)
            for k, r in enumerate(radices):
                keys = keys * np.uint64(r) + codes[:, k]
            self.lookups.append(InstanceLookup(keys, np.array(cols, dtype=np.int32), n_keys))

    def codes(self, base, codes, values):
        """The codes in the fitted table of ``base`` of tokens whose values are
        ``values[codes]``; -1 for a value outside it."""
        table = self.tables[self.bases.index(base)] if isinstance(base, str) else base
        fitted = np.fromiter(map(table.get, values, repeat(-1)), dtype=np.intp,
                             count=len(values))
        return fitted[codes]

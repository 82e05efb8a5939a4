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
import math

import numpy as np

from ._columns import fitted_codes
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
        # each name's features go to its first instance, whose lookup the
        # other instances of a disjunctive template share
        first = first_of_name(instances)
        named, flag_only = {}, {}
        for i, (name, atoms) in enumerate(instances):
            tabs = []
            for kind, _, base_name, _, _ in atoms:
                tabs.append(None if kind in ("flag", "bias")
                            else bases.setdefault(base_name, {}))
            atom_tables.append(tabs)
            if first[i] == i:
                (flag_only if all(t is None for t in tabs) else named)[name] = i
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
        lookups, spans = [], []
        for i, (tabs, codes, cols) in enumerate(zip(atom_tables, entries, columns)):
            spans.append((min(cols), max(cols)) if cols else None)
            radices = [1 if t is None else len(t) for t in tabs]
            n_keys = math.prod(radices)
            if first[i] != i or n_keys >= _KEY_LIMIT:
                lookups.append(None)        # (another instance's, or none)
                continue
            codes = np.array(codes, dtype=np.uint64).reshape(len(cols), len(tabs))
            # (codes: the flat list of each feature's codes, atom after atom)
            keys = np.zeros(len(cols), dtype=np.uint64)
            for k, r in enumerate(radices):
                keys = keys * np.uint64(r) + codes[:, k]
            lookups.append(InstanceLookup(keys, np.array(cols, dtype=np.int32), n_keys))
        self.lookups, self.order = shared(first, lookups, spans)

    @classmethod
    def from_counts(cls, instances, values, tables, export, columns):
        """The index of the vocabulary ``fit`` just made, from its counting
        pass rather than from the names (parsing 338,548 names back cost
        ``fit`` half a second on CoNLL-2000).

        ``values``, ``tables``: the counting program's value tables (the
        distinct values of each base, then ``__BOS__`` and ``__EOS__``) and
        their arrays (``_Corpus.program``); ``export``: ``(instance, key,
        id)`` of each distinct key (``count_names``); ``columns``: the
        column of each name id (-1: dropped by ``min_freq``).  The value
        tables are the corpus's, a superset of the vocabulary's: a value no
        feature holds gives keys no lookup has, hence no feature, as in
        :meth:`__init__`.  A value ``__BOS__`` (or ``__EOS__``) of the
        corpus and the boundary symbol name the same features, so the
        symbol's code is replaced by the value's in the keys, as a test
        value ``__BOS__`` is given that code.
        """
        self = cls.__new__(cls)
        self.bases, self.tables = [], []
        canon = []
        for _, atoms in instances:
            for kind, _, base_name, _, _ in atoms:
                if kind not in ("flag", "bias") and base_name not in self.bases:
                    self.bases.append(base_name)
        for table_values in values:
            n = len(table_values)
            table = dict(zip(table_values, range(n)))
            bos, eos = table.setdefault(BOS, n), table.setdefault(EOS, n + 1)
            self.tables.append(table)
            canon.append(None if (bos, eos) == (n, n + 1)
                         else np.r_[np.arange(n), bos, eos].astype(np.uint64))
        self.table_radix = tables["radix"]
        self.table_bos = np.array([t[BOS] for t in self.tables], dtype=np.int64)
        self.table_eos = np.array([t[EOS] for t in self.tables], dtype=np.int64)
        self.table_base, self.blob = tables["base"], tables["blob"]
        self.value_offs, self.bars = tables["value_offs"], tables["bars"]
        index = {name: t for t, name in enumerate(self.bases)}
        inst, keys, ids = export
        cols = columns[ids]
        by_instance = np.argsort(inst, kind="stable")
        bounds = np.searchsorted(inst[by_instance], np.arange(len(instances) + 1))
        # one lookup for the instances of a name, of every key any of them met
        first = first_of_name(instances)
        members = {}
        for i, f in enumerate(first):
            members.setdefault(f, []).append(i)
        lookups, spans = [], []
        for i, (_, atoms) in enumerate(instances):
            tabs = [None if kind in ("flag", "bias") else index[base]
                    for kind, _, base, _, _ in atoms]
            radices = [1 if t is None else int(self.table_radix[t]) for t in tabs]
            n_keys = math.prod(radices)
            if first[i] != i or n_keys >= _KEY_LIMIT:
                lookups.append(None)        # (another instance's, or none)
                spans.append(None)
                continue
            sel = np.concatenate([by_instance[bounds[j]:bounds[j + 1]] for j in members[i]])
            kept = sel[cols[sel] >= 0]
            k, c = keys[kept], cols[kept]
            if len(members[i]) > 1:
                k, once = np.unique(k, return_index=True)
                c = c[once]
            if any(t is not None and canon[t] is not None for t in tabs):
                digits = []
                for r in reversed(radices):
                    k, d = np.divmod(k, np.uint64(r))
                    digits.append(d)
                k = np.zeros(len(c), dtype=np.uint64)
                for t, r, d in zip(tabs, radices, reversed(digits)):
                    if t is not None and canon[t] is not None:
                        d = canon[t][d.astype(np.intp)]
                    k = k * np.uint64(r) + d
            spans.append((int(c.min()), int(c.max())) if len(c) else None)
            lookups.append(InstanceLookup(np.ascontiguousarray(k, dtype=np.uint64),
                                          np.ascontiguousarray(c, dtype=np.int32), n_keys))
        self.lookups, self.order = shared(first, lookups, spans)
        return self

    def codes(self, base, codes, values):
        """The codes in the fitted table of ``base`` of tokens whose values are
        ``values[codes]``; -1 for a value outside it."""
        table = self.tables[self.bases.index(base)] if isinstance(base, str) else base
        # (a code -1, a word without a cluster path, reads the -1 appended)
        return np.r_[fitted_codes(values, table), -1][codes]


def first_of_name(instances):
    """The first instance of each instance's name: the instances of a
    disjunctive template share their name, hence their features, and so
    one lookup."""
    first = {}
    return [first.setdefault(name, i) for i, (name, _) in enumerate(instances)]


def shared(first, lookups, spans):
    """Each instance's lookup, its name's first instance's, and
    :func:`row_order` of them; ``lookups`` and ``spans`` (the lowest and
    highest column, None without features) as built for first instances."""
    lookups = [lookups[f] for f in first]
    ranges = [(*spans[f], i) for i, f in enumerate(first) if spans[f] is not None]
    return lookups, row_order(ranges, len(first), lookups)


def row_order(ranges, n_instances, lookups):
    """An order of the instances in which each token's columns increase
    (``Program``'s ``order``), or None.  ``ranges``: ``(min, max, instance)``
    of the columns of each instance with features.  There is one when every
    instance has a lookup (a name table gives any column) and their column
    ranges do not overlap: the case of a vocabulary sorted by name, where
    the names of an instance share their prefix ``TEMPLATE=``, unless
    instances share their names (a disjunctive template's): rows are then
    sorted, and a column met twice in a row adds up."""
    if any(lookup is None for lookup in lookups):
        return None
    ranges = sorted(ranges)
    if any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
        return None
    seen = {i for _, _, i in ranges}
    # instances with no feature never give a column: anywhere will do
    return np.array([i for _, _, i in ranges] + [i for i in range(n_instances)
                                                  if i not in seen], dtype=np.int64)

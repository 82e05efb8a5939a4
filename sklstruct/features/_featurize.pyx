# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled featurizer of :class:`sklstruct.SequenceVectorizer`.

What is compiled, and why this way
----------------------------------
The template language evaluates atoms (a column, a derived value, a flag) at
offsets and joins them into feature names ``TEMPLATE=VALUE``.  The work
splits in two:

* per *distinct value* (a few thousand words and tags): the derived values
  (``lower``, ``shape``, affixes, the flags), which follow Python's Unicode
  rules, are computed in Python by ``_tokens._Corpus`` on the table of
  distinct values of a column, as before; each value table is then encoded
  to UTF-8 once;
* per *token*, everything else, here, with the GIL released: reading the
  atoms' value codes at their offsets (``__BOS__`` / ``__EOS__`` or no
  feature beyond the sentence, the flag masks), combining the codes of a
  template instance into one integer key, finding that key's column, and
  writing the CSR rows (columns sorted; hashed collisions summed).  Only the
  reading of the columns from the Python token objects (:func:`read_columns`)
  needs the GIL (``_columns.read_columns``).

A template instance's key is its atoms' codes in mixed radix.  With a
fitted vocabulary, the value tables are the vocabulary's own
(``_fitted_index``: the values its names hold, ``__BOS__``, ``__EOS__``; a
test value outside them gives no feature) and each instance has a read-only
lookup from key to column, built once from ``vocabulary_``, so transform
builds no name at all: a token's feature is one array read (unigrams, tag
n-grams) or one probe of an open-addressing table (word bigrams).  Looking
each distinct name of a test set up among the vocabulary's names instead
(hundreds of thousands; a cache miss or more per name, then comparing its
bytes) cost three times the rest of transform on CoNLL-2000.

When every instance has its lookup (the usual transform), the tokens are
featurized in chunks, instance after instance (``_fitted_run.pxi``).

Without such a lookup (hashing, ``fit``'s counting, and an instance whose
key space would pass 2**62) each instance keeps, per block of sentences, a
cache from key to column: a plain array when the key space is small, an
open-addressing table otherwise.  Only a key met for the first time builds
its feature name: the prefix ``TEMPLATE=`` and the atoms' UTF-8 values
(escaped as ``_tokens._join_values`` does when one of the values of a
conjunction holds a ``|``), which is then looked up in the vocabulary's
:class:`NameTable` (exact: a 64-bit hash match is confirmed by comparing
the bytes), added to it (``fit``), or hashed as scikit-learn's
``FeatureHasher`` does (MurmurHash3 x86 32-bit of the UTF-8 name, seed 0,
``abs`` modulo ``n_features``).  So the names, hence the columns, are the
ones the Python implementation gives, and a name is built once per
distinct combination of values and block, not once per token.  Keys whose
mixed radix would pass 2**62 (long conjunctions of large tables) intern
their prefix first: its id is below the block's number of tokens.

``fit`` runs the same loop in counting mode: every distinct name gets an id
in a growing name table, with its count; Python sorts the names.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset

cnp.import_array()


cdef inline bint _grow(void** array, size_t n_bytes) noexcept nogil:
    """``realloc`` the array at ``*array`` to ``n_bytes``; False, the array
    kept as it was, when out of memory."""
    cdef void* p = realloc(array[0], n_bytes)
    if p == NULL:
        return False
    array[0] = p
    return True


cdef enum:
    # atom kinds of the program (see Program)
    VALUE = 0
    FLAG = 1
    BIAS = 2
    # modes of a run
    MODE_VOCAB = 0
    MODE_HASH = 1
    MODE_COUNT = 2
    # a cache entry whose name was not built yet
    UNRESOLVED = -2
    # A key never passes this: the product of the radices stays below it.
    KEY_LIMIT_BITS = 62

cdef uint64_t KEY_LIMIT = (<uint64_t>1) << KEY_LIMIT_BITS
cdef uint64_t EMPTY = <uint64_t>0xFFFFFFFFFFFFFFFFULL
#: Most entries of one instance's dense cache, and of all of a block's (int32).
cdef int64_t DENSE_MAX = 1 << 18
cdef int64_t DENSE_BUDGET = 1 << 22


# ---------------------------------------------------------------------------
# Hashes
# ---------------------------------------------------------------------------

include "_hashes.pxi"


# ---------------------------------------------------------------------------
# The name table: feature names (UTF-8) to values, open addressing
# ---------------------------------------------------------------------------

cdef class NameTable:
    """Distinct byte strings, each with an int32 value, found by content.

    The vocabulary of a fitted vectorizer (value: the column), or the names
    counted by ``fit`` (value: unused).  Lookups are exact: the stored 64-bit
    hash only filters, the bytes are compared.
    """
    cdef char* blob
    cdef int64_t blob_len, blob_cap
    cdef int64_t* offs          # name i is blob[offs[i]:offs[i + 1]]
    cdef uint64_t* hashes
    cdef int32_t* values
    cdef int64_t n, cap         # names, and room for them
    cdef int64_t* slots         # name index or -1
    cdef int64_t n_slots        # a power of 2, at least twice n

    def __cinit__(self):
        self.n = 0
        self.cap = 0
        self.blob_len = 0
        self.blob_cap = 0
        self.n_slots = 0

    def __dealloc__(self):
        free(self.blob)
        free(self.offs)
        free(self.hashes)
        free(self.values)
        free(self.slots)

    def __len__(self):
        return self.n

    cdef int _rehash(self, int64_t n_slots) noexcept nogil:
        cdef int64_t* slots = <int64_t*>malloc(n_slots * sizeof(int64_t))
        cdef int64_t i, j
        if slots == NULL:
            return -1
        memset(slots, 0xFF, n_slots * sizeof(int64_t))
        for i in range(self.n):
            j = <int64_t>(self.hashes[i] & <uint64_t>(n_slots - 1))
            while slots[j] >= 0:
                j = (j + 1) & (n_slots - 1)
            slots[j] = i
        free(self.slots)
        self.slots = slots
        self.n_slots = n_slots
        return 0

    cdef inline int64_t find(self, const char* s, int64_t length, uint64_t h) noexcept nogil:
        """Index of the name ``s``, or -1."""
        cdef int64_t j, i
        if self.n_slots == 0:
            return -1
        j = <int64_t>(h & <uint64_t>(self.n_slots - 1))
        while True:
            i = self.slots[j]
            if i < 0:
                return -1
            if (self.hashes[i] == h and self.offs[i + 1] - self.offs[i] == length
                    and memcmp(self.blob + self.offs[i], s, length) == 0):
                return i
            j = (j + 1) & (self.n_slots - 1)

    cdef int64_t insert(self, const char* s, int64_t length, uint64_t h,
                        int32_t value) noexcept nogil:
        """Index of the name ``s``, added with ``value`` if new; -1 when out
        of memory."""
        cdef int64_t i = self.find(s, length, h), cap, j
        if i >= 0:
            return i
        if self.n + 1 > self.cap:
            cap = 2 * self.cap + 1024
            if not (_grow(<void**>&self.offs, (cap + 1) * sizeof(int64_t))
                    and _grow(<void**>&self.hashes, cap * sizeof(uint64_t))
                    and _grow(<void**>&self.values, cap * sizeof(int32_t))):
                return -1
            if self.cap == 0:
                self.offs[0] = 0
            self.cap = cap
        if self.blob_len + length > self.blob_cap:
            cap = 2 * self.blob_cap + length + 65536
            if not _grow(<void**>&self.blob, cap):
                return -1
            self.blob_cap = cap
        if 2 * (self.n + 1) > self.n_slots:
            if self._rehash(2 * self.n_slots if self.n_slots else 1024) < 0:
                return -1
        i = self.n
        memcpy(self.blob + self.blob_len, s, length)
        self.blob_len += length
        self.offs[i + 1] = self.blob_len
        self.hashes[i] = h
        self.values[i] = value
        self.n += 1
        j = <int64_t>(h & <uint64_t>(self.n_slots - 1))
        while self.slots[j] >= 0:
            j = (j + 1) & (self.n_slots - 1)
        self.slots[j] = i
        return i

    @staticmethod
    def from_names(names, values):
        """Table of the str ``names`` (UTF-8, lone surrogates passed) with
        their int ``values``."""
        cdef NameTable table = NameTable()
        cdef bytes b
        cdef int32_t value
        for name, value in zip(names, values):
            b = name.encode("utf-8", "surrogatepass")
            if table.insert(b, len(b), _hash_bytes(b, len(b)), value) < 0:
                raise MemoryError("out of memory building the vocabulary table")
        return table

    def set_values(self, const int32_t[::1] values):
        """Give name ``i`` the value ``values[i]``."""
        if values.shape[0] != self.n:
            raise ValueError("one value per name")
        if self.n:
            memcpy(self.values, &values[0], self.n * sizeof(int32_t))

    def names(self):
        """The names, as str, in the order they were added."""
        cdef int64_t i
        blob = self.blob[:self.blob_len] if self.blob_len else b""
        return [blob[self.offs[i]:self.offs[i + 1]].decode("utf-8", "surrogatepass")
                for i in range(self.n)]

    def lookup(self, str name):
        """Value of ``name``, or -1 (for the tests)."""
        b = name.encode("utf-8", "surrogatepass")
        i = self.find(b, len(b), _hash_bytes(b, len(b)))
        return -1 if i < 0 else self.values[i]


# ---------------------------------------------------------------------------
# Integer-keyed caches
# ---------------------------------------------------------------------------

cdef struct KeyMap:
    # open addressing, key EMPTY marks a free slot
    uint64_t* keys
    int32_t* vals
    int64_t n_slots, count
    uint64_t* order          # keys in order of insertion (interning levels)
    bint keep_order


cdef int _keymap_init(KeyMap* m, int64_t n_slots, bint keep_order) noexcept nogil:
    m.keys = <uint64_t*>malloc(n_slots * sizeof(uint64_t))
    m.vals = <int32_t*>malloc(n_slots * sizeof(int32_t))
    m.order = <uint64_t*>malloc((n_slots // 2 + 1) * sizeof(uint64_t)) if keep_order else NULL
    m.n_slots = n_slots
    m.count = 0
    m.keep_order = keep_order
    if m.keys == NULL or m.vals == NULL or (keep_order and m.order == NULL):
        return -1
    memset(m.keys, 0xFF, n_slots * sizeof(uint64_t))
    return 0


cdef void _keymap_free(KeyMap* m) noexcept nogil:
    free(m.keys)
    free(m.vals)
    free(m.order)
    m.keys = NULL
    m.vals = NULL
    m.order = NULL


cdef inline int64_t _keymap_slot(const KeyMap* m, uint64_t key) noexcept nogil:
    """Slot of ``key``, or the free slot where it would go."""
    cdef int64_t j = <int64_t>(_mix64(key) & <uint64_t>(m.n_slots - 1))
    while m.keys[j] != key and m.keys[j] != EMPTY:
        j = (j + 1) & (m.n_slots - 1)
    return j


cdef int _keymap_grow(KeyMap* m) noexcept nogil:
    cdef KeyMap bigger
    cdef int64_t i, j
    if _keymap_init(&bigger, 2 * m.n_slots, m.keep_order) < 0:
        _keymap_free(&bigger)
        return -1
    for i in range(m.n_slots):
        if m.keys[i] != EMPTY:
            j = _keymap_slot(&bigger, m.keys[i])
            bigger.keys[j] = m.keys[i]
            bigger.vals[j] = m.vals[i]
    if m.keep_order:
        memcpy(bigger.order, m.order, m.count * sizeof(uint64_t))
    bigger.count = m.count
    _keymap_free(m)
    m[0] = bigger
    return 0


cdef inline int _keymap_put(KeyMap* m, int64_t j, uint64_t key, int32_t val) noexcept nogil:
    """Store ``key`` in the free slot ``j``; -1 when out of memory."""
    m.keys[j] = key
    m.vals[j] = val
    if m.keep_order:
        m.order[m.count] = key
    m.count += 1
    if 2 * m.count >= m.n_slots:
        return _keymap_grow(m)
    return 0


# ---------------------------------------------------------------------------
# Fitted lookups: an instance's key (in the fitted value tables) to its column
# ---------------------------------------------------------------------------

cdef struct Lookup:
    int32_t* dense            # key -> column (-1: none), or NULL
    uint64_t n_dense
    KeyMap map                # otherwise


cdef inline int32_t _lookup(const Lookup* lk, uint64_t key) noexcept nogil:
    cdef int64_t j
    if lk.dense != NULL:
        return lk.dense[key] if key < lk.n_dense else -1
    j = _keymap_slot(&lk.map, key)
    return lk.map.vals[j] if lk.map.keys[j] != EMPTY else -1


cdef class InstanceLookup:
    """The columns of one template instance's features, by key: a dense
    array when the key space has at most ``DENSE_MAX * 4`` keys, an
    open-addressing table otherwise.  Read only once built, so threads share it."""
    cdef Lookup c

    def __cinit__(self):
        memset(&self.c, 0, sizeof(Lookup))

    def __dealloc__(self):
        free(self.c.dense)
        _keymap_free(&self.c.map)

    def __init__(self, const uint64_t[::1] keys, const int32_t[::1] columns, uint64_t n_keys):
        cdef int64_t i, n = keys.shape[0], n_slots = 1024, j
        if columns.shape[0] != n:
            raise ValueError("one column per key")
        for i in range(n):
            if keys[i] >= n_keys:
                raise ValueError("key beyond the key space")
        if n_keys <= <uint64_t>(4 * DENSE_MAX):
            self.c.dense = <int32_t*>malloc(max(n_keys, 1) * sizeof(int32_t))
            if self.c.dense == NULL:
                raise MemoryError()
            self.c.n_dense = n_keys
            memset(self.c.dense, 0xFF, n_keys * sizeof(int32_t))
            for i in range(n):
                self.c.dense[keys[i]] = columns[i]
            return
        while n_slots < 2 * n + 2:
            n_slots *= 2
        if _keymap_init(&self.c.map, n_slots, False) < 0:
            raise MemoryError()
        for i in range(n):
            j = _keymap_slot(&self.c.map, keys[i])
            self.c.map.keys[j] = keys[i]
            self.c.map.vals[j] = columns[i]
            self.c.map.count += 1


# ---------------------------------------------------------------------------
# The program: the template instances over one corpus
# ---------------------------------------------------------------------------

cdef class Program:
    """The arrays the featurizer reads, prepared and checked by
    ``_tokens._Corpus.program``.

    * ``starts`` (n_sentences + 1): first token of each sentence;
    * ``codes`` (n_tables, n_tokens): each value table's code of each token;
    * ``masks`` (n_masks, n_tokens): each flag's truth on each token;
    * ``blob``, ``value_offs``: the UTF-8 values of all tables, table ``t``
      holding values ``table_base[t] .. table_base[t] + table_radix[t]``,
      among which ``__BOS__`` and ``__EOS__`` (codes ``table_bos[t]`` and
      ``table_eos[t]``); ``bars``: which values hold a ``|``; a code -1 in
      ``codes`` is a value outside the table (no feature);
    * per instance ``i``: atoms ``inst_atoms[i] .. inst_atoms[i + 1]``, its
      name prefix ``prefix_blob[prefix_offs[i]:prefix_offs[i + 1]]``
      (``TEMPLATE=``, or the template alone for flags and bias) and
      ``has_values[i]``;
    * per atom: ``atom_kind`` (0 value, 1 flag, 2 bias), ``atom_src`` (its
      table or mask), ``atom_off`` (its offset).
    """
    cdef const int64_t[::1] starts
    cdef const Py_ssize_t[:, ::1] codes
    cdef const uint8_t[:, ::1] masks
    cdef const unsigned char[::1] blob
    cdef const int64_t[::1] value_offs, table_base, table_radix, table_bos, table_eos
    cdef const uint8_t[::1] bars
    cdef const int64_t[::1] inst_atoms, prefix_offs
    cdef const unsigned char[::1] prefix_blob
    cdef const uint8_t[::1] has_values
    cdef const int64_t[::1] atom_kind, atom_src, atom_off
    cdef bint skip
    cdef const int64_t[::1] order   # the order in which the instances are visited
    cdef bint sorted_rows           # visiting them so gives each row's columns sorted
    cdef int64_t n_inst, max_atoms, max_name
    cdef object _keep
    cdef Lookup** lookups       # per instance: its fitted lookup, or NULL

    def __cinit__(self):
        self.lookups = NULL

    def __dealloc__(self):
        free(self.lookups)

    def __init__(self, starts, codes, masks, dict tables, dict instances, bint skip,
                 lookups=None, order=None):
        """``tables``: ``blob``, ``value_offs``, ``base``, ``radix``, ``bos``,
        ``eos``, ``bars``; ``instances``: ``atoms`` (the bounds),
        ``prefix_blob``, ``prefix_offs``, ``has_values``, ``kind``, ``src``,
        ``off`` (per atom).  ``order``: an order of the instances in which
        every token's columns come out increasing (distinct instances'
        lookups give disjoint, ordered column ranges: with a vocabulary sorted
        by name, each named instance's names share the prefix ``TEMPLATE=``),
        so that rows need no sort; None: rows are sorted."""
        cdef int64_t i, j, longest = 0
        cdef InstanceLookup lookup
        blob, prefix_blob = tables["blob"], instances["prefix_blob"]
        inst_atoms, prefix_offs = instances["atoms"], instances["prefix_offs"]
        value_offs = tables["value_offs"]
        self._keep = (blob, prefix_blob, lookups)
        self.starts = starts
        self.codes = codes
        self.masks = masks
        self.blob = np.frombuffer(blob, dtype=np.uint8) if len(blob) else np.zeros(1, np.uint8)
        self.value_offs = value_offs
        self.table_base = tables["base"]
        self.table_radix = tables["radix"]
        self.table_bos = tables["bos"]
        self.table_eos = tables["eos"]
        self.bars = tables["bars"]
        self.inst_atoms = inst_atoms
        self.prefix_blob = (np.frombuffer(prefix_blob, dtype=np.uint8) if len(prefix_blob)
                            else np.zeros(1, np.uint8))
        self.prefix_offs = prefix_offs
        self.has_values = instances["has_values"]
        self.atom_kind = instances["kind"]
        self.atom_src = instances["src"]
        self.atom_off = instances["off"]
        self.skip = skip
        self.sorted_rows = order is not None
        if order is None:
            order = np.arange(len(inst_atoms) - 1, dtype=np.int64)
        elif sorted(order.tolist()) != list(range(len(inst_atoms) - 1)):
            raise ValueError("order must be a permutation of the instances")
        self.order = np.ascontiguousarray(order, dtype=np.int64)
        self.n_inst = len(inst_atoms) - 1
        self.lookups = <Lookup**>malloc((self.n_inst + 1) * sizeof(Lookup*))
        if self.lookups == NULL:
            raise MemoryError()
        for i in range(self.n_inst):
            self.lookups[i] = NULL
            if lookups is not None and lookups[i] is not None:
                lookup = lookups[i]
                self.lookups[i] = &lookup.c
            elif self.sorted_rows:
                raise ValueError("an order of the instances needs every instance's lookup")
        self.max_atoms = 0
        for i in range(self.n_inst):
            self.max_atoms = max(self.max_atoms, inst_atoms[i + 1] - inst_atoms[i])
        # (in numpy: an indexing of the Python array per value cost
        # milliseconds per transform with a fitted vocabulary's tables)
        if len(value_offs) > 1:
            longest = int(np.diff(value_offs).max())
        self.max_name = 0
        for i in range(self.n_inst):
            # every value escaped at worst doubles, plus a bar between values
            self.max_name = max(self.max_name, prefix_offs[i + 1] - prefix_offs[i]
                                + (inst_atoms[i + 1] - inst_atoms[i]) * (2 * longest + 2))


cdef struct Instance:
    # one template instance's cache within a block
    int64_t a0, a1            # its atoms
    int64_t* radix            # per atom
    bint* level               # per atom: intern the key before adding this atom
    KeyMap* levels            # per atom (used where level)
    int32_t* dense            # key -> value, or NULL
    KeyMap cache              # key -> value when not dense
    bint interned             # some atom is a level: its keys are the block's own


cdef struct Export:
    # fit's counting pass: every distinct (instance, key) and its name id,
    # for the fitted lookups (only of instances whose keys are not interned)
    int32_t* inst
    uint64_t* keys
    int32_t* ids
    int64_t n, cap


cdef int _export_add(Export* e, int32_t i, uint64_t key, int32_t id_) noexcept nogil:
    cdef int64_t cap
    if e.n == e.cap:
        cap = 2 * e.cap + 4096
        if not (_grow(<void**>&e.inst, cap * sizeof(int32_t))
                and _grow(<void**>&e.keys, cap * sizeof(uint64_t))
                and _grow(<void**>&e.ids, cap * sizeof(int32_t))):
            return -1
        e.cap = cap
    e.inst[e.n] = i
    e.keys[e.n] = key
    e.ids[e.n] = id_
    e.n += 1
    return 0


cdef void _block_free(Instance* inst, int64_t n_inst) noexcept nogil:
    cdef int64_t i, j
    if inst == NULL:
        return
    for i in range(n_inst):
        if inst[i].levels != NULL:
            for j in range(inst[i].a1 - inst[i].a0):
                if inst[i].level[j]:
                    _keymap_free(&inst[i].levels[j])
        free(inst[i].levels)
        free(inst[i].level)
        free(inst[i].radix)
        free(inst[i].dense)
        _keymap_free(&inst[i].cache)
    free(inst)


cdef Instance* _block_init(Program prog, int64_t block_tokens) noexcept nogil:
    """Caches of every instance for a block of ``block_tokens`` tokens; NULL
    when out of memory."""
    cdef Instance* inst = <Instance*>malloc(prog.n_inst * sizeof(Instance))
    cdef int64_t i, j, k, n, a, r
    cdef uint64_t R
    cdef int64_t budget = DENSE_BUDGET
    cdef bint dense
    if inst == NULL:
        return NULL
    memset(inst, 0, prog.n_inst * sizeof(Instance))
    for i in range(prog.n_inst):
        inst[i].a0 = prog.inst_atoms[i]
        inst[i].a1 = prog.inst_atoms[i + 1]
        n = inst[i].a1 - inst[i].a0
        inst[i].radix = <int64_t*>malloc(n * sizeof(int64_t))
        inst[i].level = <bint*>malloc(n * sizeof(bint))
        inst[i].levels = <KeyMap*>malloc(n * sizeof(KeyMap))
        if inst[i].radix == NULL or inst[i].level == NULL or inst[i].levels == NULL:
            _block_free(inst, prog.n_inst)
            return NULL
        memset(inst[i].levels, 0, n * sizeof(KeyMap))
        R = 1
        for k in range(n):
            a = inst[i].a0 + k
            r = prog.table_radix[prog.atom_src[a]] if prog.atom_kind[a] == VALUE else 1
            inst[i].radix[k] = r
            inst[i].level[k] = R > KEY_LIMIT / <uint64_t>r
            if inst[i].level[k]:
                if _keymap_init(&inst[i].levels[k], 64, True) < 0:
                    _block_free(inst, prog.n_inst)
                    return NULL
                R = <uint64_t>block_tokens + 1    # ids of the prefixes seen
            R *= <uint64_t>r
        dense = True
        for k in range(n):
            dense = dense and not inst[i].level[k]
        inst[i].interned = not dense
        if prog.lookups[i] != NULL:
            pass                                  # the fitted lookup serves
        elif (dense and R <= <uint64_t>DENSE_MAX and <int64_t>R <= budget
                and <int64_t>R <= 64 * block_tokens + 4096):
            budget -= <int64_t>R
            inst[i].dense = <int32_t*>malloc(R * sizeof(int32_t))
            if inst[i].dense == NULL:
                _block_free(inst, prog.n_inst)
                return NULL
            for j in range(<int64_t>R):
                inst[i].dense[j] = UNRESOLVED
        elif _keymap_init(&inst[i].cache, 1024, False) < 0:
            _block_free(inst, prog.n_inst)
            return NULL
    return inst


cdef inline char* _append(char* p, const char* s, int64_t n, bint escape) noexcept nogil:
    cdef int64_t i
    if not escape:
        memcpy(p, s, n)
        return p + n
    for i in range(n):
        if s[i] == b'|' or s[i] == b'\\':
            p[0] = b'\\'
            p += 1
        p[0] = s[i]
        p += 1
    return p


cdef int64_t _build_name(Program prog, Instance* inst, int64_t i, uint64_t key,
                         int64_t* codes, char* name) noexcept nogil:
    """Write the feature name of ``key`` of instance ``i`` into ``name``;
    its length."""
    cdef int64_t n = inst.a1 - inst.a0, k, a, g
    cdef char* p = name
    cdef bint escape = False
    for k in range(n - 1, -1, -1):
        codes[k] = <int64_t>(key % <uint64_t>inst.radix[k])
        key //= <uint64_t>inst.radix[k]
        if inst.level[k]:
            key = inst.levels[k].order[key]
    p = _append(p, <const char*>&prog.prefix_blob[0] + prog.prefix_offs[i],
                prog.prefix_offs[i + 1] - prog.prefix_offs[i], False)
    if not prog.has_values[i]:
        return p - name
    if n > 1:
        for k in range(n):
            a = inst.a0 + k
            if prog.atom_kind[a] == VALUE:
                escape = escape or prog.bars[prog.table_base[prog.atom_src[a]] + codes[k]]
    for k in range(n):
        a = inst.a0 + k
        if k:
            p[0] = b'|'
            p += 1
        if prog.atom_kind[a] == VALUE:
            g = prog.table_base[prog.atom_src[a]] + codes[k]
            p = _append(p, <const char*>&prog.blob[0] + prog.value_offs[g],
                        prog.value_offs[g + 1] - prog.value_offs[g], escape)
        else:
            p[0] = b'1'
            p += 1
    return p - name


cdef int _compare_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef int64_t _run(Program prog, int64_t s0, int64_t s1, int mode, NameTable table,
                  int64_t n_features, int64_t* indptr, int32_t* indices, double* data,
                  int64_t** counts, int64_t* counts_cap, Export* export) noexcept nogil:
    """Featurize sentences ``s0 .. s1``.  Modes: vocabulary (columns from
    ``table``), hashing (``n_features`` columns) or counting (names added to
    ``table``, ``counts[id]`` incremented; with ``export``, each distinct
    key of an instance whose keys are not interned, with its name id).
    Writes the CSR rows (not when counting); returns the number of entries,
    or -1 when out of memory."""
    cdef int64_t block_tokens = prog.starts[s1] - prog.starts[s0]
    cdef Instance* inst = _block_init(prog, block_tokens)
    cdef char* name = <char*>malloc(prog.max_name + 1)
    cdef int64_t* codes = <int64_t*>malloc((prog.max_atoms + 1) * sizeof(int64_t))
    cdef int32_t* row = <int32_t*>malloc((prog.n_inst + 1) * sizeof(int32_t))
    cdef int64_t s, start, length, t, pos, i, ii, a, k, p, c, j, m, nnz = 0, r, q, name_len
    cdef int64_t* grown
    cdef uint64_t key, h
    cdef int32_t v
    cdef int64_t id_
    cdef Instance* ins
    cdef bint ok
    cdef int failed = 0
    if inst == NULL or name == NULL or codes == NULL or row == NULL:
        failed = 1
    else:
        if indptr != NULL:
            indptr[0] = 0
        for s in range(s0, s1):
            start = prog.starts[s]
            length = prog.starts[s + 1] - start
            for pos in range(length):
                t = start + pos
                m = 0
                for ii in range(prog.n_inst):
                    i = prog.order[ii]
                    ins = &inst[i]
                    key = 0
                    ok = True
                    for k in range(ins.a1 - ins.a0):
                        a = ins.a0 + k
                        p = pos + prog.atom_off[a]
                        if prog.atom_kind[a] == VALUE:
                            if p < 0 or p >= length:
                                if prog.skip:
                                    ok = False
                                    break
                                c = (prog.table_bos[prog.atom_src[a]] if p < 0
                                     else prog.table_eos[prog.atom_src[a]])
                            else:
                                c = prog.codes[prog.atom_src[a], start + p]
                                if c < 0:
                                    ok = False     # a value no feature has
                                    break
                        elif prog.atom_kind[a] == FLAG:
                            if p < 0 or p >= length or not prog.masks[prog.atom_src[a], start + p]:
                                ok = False
                                break
                            c = 0
                        else:
                            c = 0
                        if ins.level[k]:
                            # intern the prefix: its id replaces it
                            j = _keymap_slot(&ins.levels[k], key)
                            if ins.levels[k].keys[j] == EMPTY:
                                id_ = ins.levels[k].count
                                if _keymap_put(&ins.levels[k], j, key, <int32_t>id_) < 0:
                                    failed = 1
                                    break
                                key = <uint64_t>id_
                            else:
                                key = <uint64_t>ins.levels[k].vals[j]
                        key = key * <uint64_t>ins.radix[k] + <uint64_t>c
                    if failed:
                        break
                    if not ok:
                        continue
                    if prog.lookups[i] != NULL:
                        v = _lookup(prog.lookups[i], key)
                    elif ins.dense != NULL:
                        v = ins.dense[key]
                        j = -1
                    else:
                        j = _keymap_slot(&ins.cache, key)
                        v = ins.cache.vals[j] if ins.cache.keys[j] != EMPTY else UNRESOLVED
                    if v == UNRESOLVED:
                        name_len = _build_name(prog, ins, i, key, codes, name)
                        if mode == MODE_HASH:
                            v = _hashed_column(name, name_len, n_features)
                        else:
                            h = _hash_bytes(name, name_len)
                            if mode == MODE_VOCAB:
                                id_ = table.find(name, name_len, h)
                                v = -1 if id_ < 0 else table.values[id_]
                            else:
                                id_ = table.insert(name, name_len, h, 0)
                                if id_ < 0:
                                    failed = 1
                                    break
                                v = <int32_t>id_
                                if (export != NULL and not ins.interned and
                                        _export_add(export, <int32_t>i, key, v) < 0):
                                    failed = 1
                                    break
                        if ins.dense != NULL:
                            ins.dense[key] = v
                        elif _keymap_put(&ins.cache, j, key, v) < 0:
                            failed = 1
                            break
                    if v < 0:
                        continue
                    if mode == MODE_COUNT:
                        if v >= counts_cap[0]:
                            r = max(2 * counts_cap[0], v + 1024)
                            grown = <int64_t*>realloc(counts[0], r * sizeof(int64_t))
                            if grown == NULL:
                                failed = 1
                                break
                            memset(grown + counts_cap[0], 0,
                                   (r - counts_cap[0]) * sizeof(int64_t))
                            counts[0] = grown
                            counts_cap[0] = r
                        counts[0][v] += 1
                    else:
                        row[m] = v
                        m += 1
                if failed:
                    break
                if mode != MODE_COUNT:
                    # sorted columns; hashed collisions add up
                    if m > 64:
                        qsort(row, m, sizeof(int32_t), _compare_int32)
                    else:
                        for q in range(1, m):
                            v = row[q]
                            r = q - 1
                            while r >= 0 and row[r] > v:
                                row[r + 1] = row[r]
                                r -= 1
                            row[r + 1] = v
                    for q in range(m):
                        if q and row[q] == row[q - 1]:
                            data[nnz - 1] += 1.0
                        else:
                            indices[nnz] = row[q]
                            data[nnz] = 1.0
                            nnz += 1
                    indptr[t - prog.starts[s0] + 1] = nnz
            if failed:
                break
    _block_free(inst, prog.n_inst)
    free(name)
    free(codes)
    free(row)
    return -1 if failed else nnz


# the loop of a fitted vocabulary whose instances all have their lookups
include "_fitted_run.pxi"


def featurize(Program prog, Py_ssize_t s0, Py_ssize_t s1, NameTable table, int64_t n_features):
    """CSR rows of the tokens of sentences ``s0 .. s1``: ``(indptr, indices,
    data)``, the columns from the vocabulary ``table`` or, when it is None,
    hashed into ``n_features``.  Releases the GIL."""
    if not 0 <= s0 <= s1 < len(prog.starts):
        raise ValueError("sentence range out of bounds")
    cdef int64_t n_rows = prog.starts[s1] - prog.starts[s0]
    cdef int64_t cap = n_rows * prog.n_inst
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indices = np.empty(max(cap, 1), dtype=np.int32)
    data = np.empty(max(cap, 1), dtype=np.float64)
    cdef int64_t[::1] ip = indptr
    cdef int32_t[::1] ix = indices
    cdef double[::1] dt = data
    cdef int mode = MODE_HASH if table is None else MODE_VOCAB
    cdef int64_t nnz
    if n_features < 1:
        raise ValueError("n_features must be positive")
    with nogil:
        if mode == MODE_VOCAB and prog.sorted_rows:
            nnz = _run_fitted(prog, s0, s1, &ip[0], &ix[0], &dt[0])
        else:
            nnz = _run(prog, s0, s1, mode, table, n_features, &ip[0], &ix[0], &dt[0],
                       NULL, NULL, NULL)
    if nnz < 0:
        raise MemoryError("out of memory featurizing")
    return indptr, indices[:nnz], data[:nnz]


def count_names(Program prog):
    """Every feature name of the corpus with its count (``fit``): a
    :class:`NameTable` of the names in order of first appearance, their
    counts (int64), and each distinct key of each instance whose keys are
    not interned with its name's id: ``(instance, key, id)`` arrays (int32,
    uint64, int32), from which ``fit`` builds the fitted lookups without
    parsing the names back."""
    cdef NameTable table = NameTable()
    cdef int64_t* counts = NULL
    cdef int64_t cap = 0, r
    cdef Py_ssize_t n_sent = len(prog.starts) - 1
    cdef Export export
    memset(&export, 0, sizeof(Export))
    with nogil:
        r = _run(prog, 0, n_sent, MODE_COUNT, table, 1, NULL, NULL, NULL, &counts, &cap,
                 &export)
    try:
        if r < 0:
            raise MemoryError("out of memory counting the features")
        out = np.zeros(table.n, dtype=np.int64)
        if table.n:
            memcpy(cnp.PyArray_DATA(out), counts, table.n * sizeof(int64_t))
        inst = np.empty(export.n, dtype=np.int32)
        keys = np.empty(export.n, dtype=np.uint64)
        ids = np.empty(export.n, dtype=np.int32)
        if export.n:
            memcpy(cnp.PyArray_DATA(inst), export.inst, export.n * sizeof(int32_t))
            memcpy(cnp.PyArray_DATA(keys), export.keys, export.n * sizeof(uint64_t))
            memcpy(cnp.PyArray_DATA(ids), export.ids, export.n * sizeof(int32_t))
    finally:
        free(counts)
        free(export.inst)
        free(export.keys)
        free(export.ids)
    return table, out, (inst, keys, ids)

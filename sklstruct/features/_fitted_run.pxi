# The featurizer's loop for a fitted vocabulary whose every template instance
# has its lookup (``Program.sorted_rows``: the usual transform), included by
# _featurize.pyx.
#
# Why a loop of its own: the general loop (``_run``) visits token after token
# and, within a token, instance after instance, testing each atom's kind and
# each instance's cache kind as it goes, and probing up to twenty lookups (a
# few megabytes, the word bigrams' tables beyond the caches) in turn.  Here the
# tokens go in chunks of whole sentences, and within a chunk, instance after
# instance: one atom's codes over the chunk (a sequential read, no kind
# tested per token), then that instance's lookup over the chunk (one table
# hot at a time; an open-addressing table's slots are prefetched some tokens
# ahead, so that its cache misses overlap), then the chunk's rows are written
# from the columns found.  Rows come out sorted: the columns are written in
# ``Program.order``.

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SKLSTRUCT_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define SKLSTRUCT_PREFETCH(p) ((void)0)
    #endif
    """
    void _prefetch "SKLSTRUCT_PREFETCH"(const void* p) noexcept nogil

#: Tokens per chunk (or one sentence, when longer): the chunk's keys and
#: columns (12 bytes a token, 4 more per instance) stay in the fastest caches.
cdef int64_t CHUNK_TOKENS = 1024
#: How many tokens ahead a table's slot is prefetched.
cdef int64_t PREFETCH_AHEAD = 16


cdef void _chunk_keys(Program prog, int64_t i, int64_t t0, int64_t n,
                      const int64_t* first, const int64_t* stop,
                      uint64_t* keys) noexcept nogil:
    """The fitted key of instance ``i`` at each token ``t0 .. t0 + n`` (token
    ``t0 + t`` lies in sentence ``first[t] .. stop[t]``), or EMPTY where it
    has no feature (an atom beyond the sentence with boundary ``skip``, a
    value outside the fitted table, a flag that does not fire)."""
    cdef int64_t a, t, p, o, src, c, r, bos, eos
    cdef const Py_ssize_t* crow
    cdef const uint8_t* mrow
    cdef uint64_t key
    cdef bint skip = prog.skip
    for t in range(n):
        keys[t] = 0
    for a in range(prog.inst_atoms[i], prog.inst_atoms[i + 1]):
        o = prog.atom_off[a]
        src = prog.atom_src[a]
        if prog.atom_kind[a] == VALUE:
            r = prog.table_radix[src]
            bos = -1 if skip else prog.table_bos[src]
            eos = -1 if skip else prog.table_eos[src]
            crow = &prog.codes[src, 0]
            for t in range(n):
                key = keys[t]
                p = t0 + t + o
                if p < first[t]:
                    c = bos
                elif p >= stop[t]:
                    c = eos
                else:
                    c = crow[p]
                # (a key stays below 2**62: EMPTY is never one)
                keys[t] = EMPTY if c < 0 or key == EMPTY else key * <uint64_t>r + <uint64_t>c
        elif prog.atom_kind[a] == FLAG:
            mrow = &prog.masks[src, 0]
            for t in range(n):
                p = t0 + t + o
                if p < first[t] or p >= stop[t] or not mrow[p]:
                    keys[t] = EMPTY
        # (bias: radix 1, code 0: the key is unchanged)


cdef void _chunk_columns(const Lookup* lk, const uint64_t* keys, int64_t n,
                         int32_t* out, int64_t stride) noexcept nogil:
    """``out[t * stride]``: the column of ``keys[t]`` (-1: none)."""
    cdef int64_t t, j, mask
    cdef uint64_t key
    if lk.dense != NULL:
        for t in range(n):
            key = keys[t]
            # (EMPTY is beyond any dense table)
            out[t * stride] = lk.dense[key] if key < lk.n_dense else -1
        return
    mask = lk.map.n_slots - 1
    for t in range(n):
        if t + PREFETCH_AHEAD < n and keys[t + PREFETCH_AHEAD] != EMPTY:
            j = <int64_t>(_mix64(keys[t + PREFETCH_AHEAD]) & <uint64_t>mask)
            _prefetch(&lk.map.keys[j])
            _prefetch(&lk.map.vals[j])
        key = keys[t]
        if key == EMPTY:
            out[t * stride] = -1
        else:
            j = _keymap_slot(&lk.map, key)
            out[t * stride] = lk.map.vals[j] if lk.map.keys[j] != EMPTY else -1


cdef int64_t _run_fitted(Program prog, int64_t s0, int64_t s1, int64_t* indptr,
                         int32_t* indices, double* data) noexcept nogil:
    """The CSR rows of sentences ``s0 .. s1`` (see the top of this file);
    the number of entries, or -1 when out of memory."""
    cdef int64_t n_inst = prog.n_inst, base = prog.starts[s0], cap = CHUNK_TOKENS
    cdef int64_t s, sa, sb, t, t0, n, q, nnz = 0, ii
    cdef int32_t v
    cdef int32_t* row
    for s in range(s0, s1):
        cap = max(cap, prog.starts[s + 1] - prog.starts[s])
    cdef int64_t* first = <int64_t*>malloc(cap * sizeof(int64_t))
    cdef int64_t* stop = <int64_t*>malloc(cap * sizeof(int64_t))
    cdef uint64_t* keys = <uint64_t*>malloc(cap * sizeof(uint64_t))
    # each token's columns, instance ``order[ii]`` at ``ii``: a row in order
    cdef int32_t* cols = <int32_t*>malloc(cap * max(n_inst, 1) * sizeof(int32_t))
    if first == NULL or stop == NULL or keys == NULL or cols == NULL:
        nnz = -1
    else:
        indptr[0] = 0
        sa = s0
        while sa < s1:
            t0 = prog.starts[sa]
            sb = sa + 1
            while sb < s1 and prog.starts[sb + 1] - t0 <= cap:
                sb += 1
            n = prog.starts[sb] - t0
            for s in range(sa, sb):
                for t in range(prog.starts[s] - t0, prog.starts[s + 1] - t0):
                    first[t] = prog.starts[s]
                    stop[t] = prog.starts[s + 1]
            for ii in range(n_inst):
                _chunk_keys(prog, prog.order[ii], t0, n, first, stop, keys)
                _chunk_columns(prog.lookups[prog.order[ii]], keys, n, cols + ii, n_inst)
            for t in range(n):
                row = cols + t * n_inst
                for q in range(n_inst):
                    v = row[q]
                    if v >= 0:
                        indices[nnz] = v
                        data[nnz] = 1.0
                        nnz += 1
                indptr[t0 + t - base + 1] = nnz
            sa = sb
    free(first)
    free(stop)
    free(keys)
    free(cols)
    return nnz

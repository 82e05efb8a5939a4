# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A list of per-sentence CSR matrices, checked in C: stacked into one, or
decoded where it lies.

The data contract of the taggers is a list of per-sentence feature matrices.
Checking each sentence with NumPy and SciPy (``_validation.check_csr_sentence``)
costs a fixed ~0.2 ms of calls a sentence, several times the decoding of it.
The common case, every sentence a canonical SciPy CSR matrix with int32
indices and float64 values (what :class:`sklstruct.SequenceVectorizer` and
``scipy.sparse.csr_matrix(dense)`` give), is taken in C: :func:`csr_parts`
checks each sentence's arrays (pass 1), then :func:`stack_csr` copies the
entries into stacked arrays, checking them as it copies, or, for
``predict``, :func:`decode_parts` checks and decodes each sentence in turn
without stacking the corpus (which wrote and read the whole corpus once
more).  Anything else, and any sentence that fails a check, is left to the
general path, which names the problem and its place with the messages of
``_validation``, so the paths cannot disagree on what is valid.
"""
import numpy as np
import scipy.sparse as sp

cimport numpy as cnp
from cython cimport floating
from libc.math cimport fabs, isfinite
from libc.stdlib cimport free, malloc

from sklstruct._viterbi cimport (compute_emission_checked, compute_emission_checked_f32,
                                 decode_best, lattice_nodes)

cnp.import_array()

_CSR_TYPES = (sp.csr_matrix, sp.csr_array)


cdef extern from *:
    void __builtin_prefetch(const void* p) noexcept nogil


cdef inline void _prefetch(const void* p, Py_ssize_t n_bytes) noexcept nogil:
    """Ask for ``n_bytes`` at ``p`` to be brought into the cache."""
    cdef Py_ssize_t b
    for b in range(0, n_bytes, 64):
        __builtin_prefetch(<const char*>p + b)


cdef inline bint _vector_of(object a, int typenum):
    """Whether ``a`` is a 1-D C-contiguous ndarray of that NumPy type."""
    return (isinstance(a, cnp.ndarray) and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a))


cdef bint _snapshot_indptr(const int* indptr, Py_ssize_t rows, long long stored,
                          long long* out) noexcept nogil:
    """Copy a sentence's index pointer into ``out``, checking the copy: it
    starts at 0, never decreases and ends at the ``stored`` entries pass 1
    saw.  The entries are then read through the checked copy only, so an
    array rewritten meanwhile by another thread cannot send a read out of
    bounds."""
    cdef Py_ssize_t r
    for r in range(rows + 1):
        out[r] = indptr[r]
    if out[0] != 0 or out[rows] != stored:
        return False
    for r in range(rows):
        if out[r + 1] < out[r]:
            return False
    return True


cdef bint _copy_canonical(const long long* indptr, const int* indices, const double* data,
                          Py_ssize_t rows, Py_ssize_t cols, double max_abs,
                          int* out_indices, double* out_data) noexcept nogil:
    """Copy one sentence's entries, checking on the way that each row's
    column indices increase strictly within [0, cols) (sorted, no
    duplicates: the canonical form the general path produces) and every
    value is finite and at most ``max_abs`` in absolute value; False if one
    does not.  One pass reads each entry once: the copy is bound by memory
    (separate copy and check loops were slower)."""
    cdef Py_ssize_t r, j
    cdef int c, prev
    cdef bint bad = False
    cdef double v
    for r in range(rows):
        prev = -1                       # (so a negative index is caught too)
        for j in range(indptr[r], indptr[r + 1]):
            c = indices[j]
            v = data[j]
            bad |= (c <= prev) | (c >= cols) | (not fabs(v) <= max_abs)
            prev = c
            out_indices[j] = c
            out_data[j] = v
    return not bad


cdef class CsrParts:
    """Pass 1 of :func:`csr_parts` over a list of sentences: each sentence's
    index pointer, column index and value arrays (kept alive here whatever
    happens to the list), their rows and stored entries, and the sentences'
    row offsets.  The index pointers (beyond their last value) and the
    entries are not checked yet: whoever reads them does, as it reads them
    (:func:`stack_csr`, :func:`decode_parts`)."""
    cdef readonly object arrays         # [(indptr, indices, data)] of each sentence
    cdef readonly object counts         # (n, 2) int64: rows, stored entries
    cdef readonly object offsets        # (n + 1,) int64: the first row of each sentence
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t max_rows
    cdef object _pointers               # (n, 3) uintp: the three arrays' data


def csr_parts(list X, Py_ssize_t n_features):
    """:class:`CsrParts` of the sentences ``X``, or the index of the first
    sentence this fast path does not take.

    ``n_features``: the column count every sentence must have (-1: that of
    the first).  A sentence is taken when it is a ``csr_matrix`` or
    ``csr_array`` with at least one row and column, ``n_features`` columns,
    int32 index arrays and float64 values, and an index pointer that ends
    within them.
    """
    cdef Py_ssize_t n = len(X), i, rows, cols
    cdef object x, shape
    cdef cnp.ndarray ip, ix, dt
    cdef const int* ipp
    arrays = []
    counts = np.empty((n, 2), dtype=np.int64)
    pointers = np.empty((n, 3), dtype=np.uintp)
    cdef long long[:, ::1] cv = counts
    cdef size_t[:, ::1] pv = pointers
    cdef Py_ssize_t max_rows = 0
    for i in range(n):
        x = X[i]
        if type(x) not in _CSR_TYPES:
            return i
        # (scipy's own attribute where it has it: ``shape`` is a Python
        # property, the costliest read of this loop)
        shape = getattr(x, "_shape", None)
        rows, cols = x.shape if type(shape) is not tuple or len(shape) != 2 else shape
        if rows < 1 or cols < 1 or (n_features >= 0 and cols != n_features):
            return i
        n_features = cols
        ip, ix, dt = x.indptr, x.indices, x.data
        if not (_vector_of(ip, cnp.NPY_INT32) and _vector_of(ix, cnp.NPY_INT32)
                and _vector_of(dt, cnp.NPY_FLOAT64)) or ip.shape[0] != rows + 1:
            return i
        ipp = <const int*>cnp.PyArray_DATA(ip)
        # (the sizes to allocate; the rest of the index pointer is checked
        # where it is read, by _snapshot_indptr)
        if not 0 <= ipp[rows] <= min(ix.shape[0], dt.shape[0]):
            return i
        cv[i, 0] = rows
        cv[i, 1] = ipp[rows]
        max_rows = max(max_rows, rows)
        pv[i, 0] = <size_t>ipp
        pv[i, 1] = <size_t>cnp.PyArray_DATA(ix)
        pv[i, 2] = <size_t>cnp.PyArray_DATA(dt)
        arrays.append((ip, ix, dt))
    cdef CsrParts parts = CsrParts.__new__(CsrParts)
    parts.arrays = arrays
    parts.counts = counts
    parts.offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts[:, 0], out=parts.offsets[1:])
    parts.n_features = max(n_features, 0)
    parts.max_rows = max_rows
    parts._pointers = pointers
    return parts


def stack_csr(list X, Py_ssize_t n_features, double max_abs):
    """``(matrix, offsets)`` of the sentences ``X`` stacked, or the index of
    the first sentence this fast path does not take: one that
    :func:`csr_parts` does not, or whose entries are not canonical (column
    indices strictly increasing within ``[0, n_features)``) or whose values
    are not finite and at most ``max_abs``.
    """
    parts = csr_parts(X, n_features)
    if not isinstance(parts, CsrParts):
        return parts
    cdef CsrParts p = parts
    cdef Py_ssize_t n = len(X), i, r, rows, nnz, row = 0, base = 0
    cdef long long[:, ::1] cv = p.counts
    cdef size_t[:, ::1] pv = p._pointers
    total_rows, total_nnz = (int(t) for t in p.counts.sum(axis=0)) if n else (0, 0)
    indptr = np.empty(total_rows + 1, dtype=np.int64)
    indices = np.empty(total_nnz, dtype=np.int32)
    data = np.empty(total_nnz, dtype=np.float64)
    cdef long long[::1] out_ptr = indptr
    cdef int* out_ix = <int*>cnp.PyArray_DATA(indices)
    cdef double* out_dt = <double*>cnp.PyArray_DATA(data)
    cdef long long* ptr = <long long*>malloc((p.max_rows + 1) * sizeof(long long))
    if ptr == NULL:
        raise MemoryError()
    # pass 2: the entries, checked as they are copied
    for i in range(n):
        rows, nnz = cv[i, 0], cv[i, 1]
        if not (_snapshot_indptr(<const int*>pv[i, 0], rows, nnz, ptr)
                and _copy_canonical(ptr, <const int*>pv[i, 1], <const double*>pv[i, 2], rows,
                                    p.n_features, max_abs, out_ix + base, out_dt + base)):
            free(ptr)
            return i
        for r in range(rows):
            out_ptr[row + r] = base + ptr[r]
        row += rows
        base += nnz
    out_ptr[row] = base
    free(ptr)
    if total_nnz < 2**31 - 1:          # (scipy's own choice: int32 while it fits)
        indptr = indptr.astype(np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(total_rows, p.n_features),
                         copy=False), p.offsets


def decode_parts(CsrParts parts, Py_ssize_t start, Py_ssize_t stop, const floating[:, ::1] W,
                 const double[:, ::1] P, int order, int[::1] out, double max_abs):
    """Viterbi labels of sentences ``start:stop`` of ``parts``, read where
    they lie (not stacked), into ``out`` at their rows of ``parts.offsets``;
    -1, or the index of the first of them whose entries are not canonical
    or whose values are not finite and at most ``max_abs``, or whose best
    score overflows (the caller then takes the general path, which names
    the problem).

    Each sentence's entries are checked as its emission scores are summed
    (:c:func:`sklstruct._viterbi.compute_emission_checked`, which reads
    each index once, so that the kernel never reads W out of bounds even
    if another thread rewrites the caller's arrays meanwhile), and the
    corpus is read once, where stacking it wrote and read it again.  ``W``
    (n_features, L) and ``P`` (the packed chain of ``order``) must be those
    ``decode_corpus`` takes.
    """
    cdef Py_ssize_t L = W.shape[1], s, T, nnz
    if W.shape[0] != parts.n_features or not 0 <= start <= stop <= len(parts.arrays) \
            or out.shape[0] < parts.offsets[stop] or order not in (1, 2) \
            or P.shape[0] != L + 2 + (L * L if order == 2 else 0) or P.shape[1] != L:
        raise ValueError("decode_parts: the weights, chain, range or output do not fit")
    if start == stop or L == 0:
        return -1
    cdef long long[:, ::1] cv = parts.counts
    cdef size_t[:, ::1] pv = parts._pointers
    cdef const long long[::1] offsets = parts.offsets
    cdef Py_ssize_t n_nodes = lattice_nodes(parts.max_rows, L, order)
    cdef long long* ptr = <long long*>malloc((parts.max_rows + 1) * sizeof(long long))
    cdef bint ok
    cdef double* E = <double*>malloc(parts.max_rows * L * sizeof(double))
    cdef double* delta = <double*>malloc(n_nodes * sizeof(double))
    cdef int* back = <int*>malloc(n_nodes * sizeof(int))
    cdef Py_ssize_t bad = -1
    if ptr == NULL or E == NULL or delta == NULL or back == NULL:
        free(ptr); free(E); free(delta); free(back)
        raise MemoryError()
    with nogil:
        for s in range(start, stop):
            T, nnz = cv[s, 0], cv[s, 1]
            if s + 1 < stop:
                # each sentence's arrays are small separate blocks, which the
                # hardware prefetcher does not run ahead into: fetch the next
                # sentence's while this one is decoded
                _prefetch(<const void*>pv[s + 1, 0], (cv[s + 1, 0] + 1) * sizeof(int))
                _prefetch(<const void*>pv[s + 1, 1], cv[s + 1, 1] * sizeof(int))
                _prefetch(<const void*>pv[s + 1, 2], cv[s + 1, 1] * sizeof(double))
            if not _snapshot_indptr(<const int*>pv[s, 0], T, nnz, ptr):
                bad = s
                break
            if floating is double:
                ok = compute_emission_checked(ptr, <const int*>pv[s, 1], <const double*>pv[s, 2],
                                              T, parts.n_features, max_abs, &W[0, 0], L, E)
            else:
                ok = compute_emission_checked_f32(ptr, <const int*>pv[s, 1],
                                                  <const double*>pv[s, 2], T, parts.n_features,
                                                  max_abs, &W[0, 0], L, E)
            if not ok or not isfinite(decode_best(E, T, L, &P[0, 0], order, delta, back,
                                        &out[offsets[s]])):
                bad = s
                break
    free(ptr); free(E); free(delta); free(back)
    return bad

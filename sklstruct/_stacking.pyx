# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A list of per-sentence CSR matrices stacked into one, checked in C.

The data contract of the taggers is a list of per-sentence feature matrices.
Checking each sentence with NumPy and SciPy (``_validation.check_csr_sentence``)
costs a fixed ~0.2 ms of calls a sentence, several times the decoding of it.
:func:`stack_csr` takes the common case, every sentence a canonical SciPy CSR
matrix with int32 indices and float64 values (what
:class:`sklstruct.SequenceVectorizer` and ``scipy.sparse.csr_matrix(dense)``
give), in two passes over the list in C: check each sentence's arrays, then
copy them into the stacked arrays.  Anything else, and any sentence that fails
a check, is left to the general path, which names the problem and its place
with the messages of ``_validation``, so the two paths cannot disagree on what
is valid.
"""
import numpy as np
import scipy.sparse as sp

cimport numpy as cnp
from libc.math cimport fabs

cnp.import_array()

_CSR_TYPES = (sp.csr_matrix, sp.csr_array)


cdef inline bint _vector_of(object a, int typenum):
    """Whether ``a`` is a 1-D C-contiguous ndarray of that NumPy type."""
    return (isinstance(a, cnp.ndarray) and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a))


cdef bint _valid_indptr(const int* indptr, Py_ssize_t rows, Py_ssize_t stored) noexcept nogil:
    """Whether ``indptr`` starts at 0, never decreases and stays within the
    ``stored`` entries (checked before any entry is read)."""
    cdef Py_ssize_t r
    if indptr[0] != 0 or indptr[rows] > stored:
        return False
    for r in range(rows):
        if indptr[r + 1] < indptr[r]:
            return False
    return True


cdef bint _copy_canonical(const int* indptr, const int* indices, const double* data,
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


def stack_csr(list X, Py_ssize_t n_features, double max_abs):
    """``(matrix, offsets)`` of the sentences ``X`` stacked, or the index of
    the first sentence this fast path does not take.

    ``n_features``: the column count every sentence must have (-1: that of
    the first).  A sentence is taken when it is a ``csr_matrix`` or
    ``csr_array`` with at least one row and column, ``n_features`` columns,
    int32 index arrays and float64 values whose structure is valid and
    canonical and whose values are finite and at most ``max_abs``.
    """
    cdef Py_ssize_t n = len(X), i, r, rows, cols, nnz, row = 0, base = 0
    cdef object x
    cdef cnp.ndarray ip, ix, dt
    cdef const int* ipp
    # pass 1: the kinds, shapes and index pointers; the sizes
    parts = []
    counts = np.empty((n, 2), dtype=np.int64)       # rows, stored entries
    cdef long long[:, ::1] cv = counts
    for i in range(n):
        x = X[i]
        if type(x) not in _CSR_TYPES:
            return i
        rows, cols = x.shape
        if rows < 1 or cols < 1 or (n_features >= 0 and cols != n_features):
            return i
        n_features = cols
        ip, ix, dt = x.indptr, x.indices, x.data
        if not (_vector_of(ip, cnp.NPY_INT32) and _vector_of(ix, cnp.NPY_INT32)
                and _vector_of(dt, cnp.NPY_FLOAT64)) or ip.shape[0] != rows + 1:
            return i
        ipp = <const int*>cnp.PyArray_DATA(ip)
        if not _valid_indptr(ipp, rows, min(ix.shape[0], dt.shape[0])):
            return i
        cv[i, 0] = rows
        cv[i, 1] = ipp[rows]
        parts.append((ip, ix, dt))      # (kept alive whatever happens to X)
    total_rows, total_nnz = (int(t) for t in counts.sum(axis=0)) if n else (0, 0)
    indptr = np.empty(total_rows + 1, dtype=np.int64)
    indices = np.empty(total_nnz, dtype=np.int32)
    data = np.empty(total_nnz, dtype=np.float64)
    cdef long long[::1] out_ptr = indptr
    cdef int* out_ix = <int*>cnp.PyArray_DATA(indices)
    cdef double* out_dt = <double*>cnp.PyArray_DATA(data)
    # pass 2: the entries, checked as they are copied
    for i in range(n):
        ip, ix, dt = parts[i]
        rows, nnz = cv[i, 0], cv[i, 1]
        ipp = <const int*>cnp.PyArray_DATA(ip)
        if not _copy_canonical(ipp, <const int*>cnp.PyArray_DATA(ix),
                               <const double*>cnp.PyArray_DATA(dt), rows, n_features,
                               max_abs, out_ix + base, out_dt + base):
            return i
        for r in range(rows):
            out_ptr[row + r] = base + ipp[r]
        row += rows
        base += nnz
    out_ptr[row] = base
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts[:, 0], out=offsets[1:])
    if total_nnz < 2**31 - 1:          # (scipy's own choice: int32 while it fits)
        indptr = indptr.astype(np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(total_rows, n_features),
                         copy=False), offsets

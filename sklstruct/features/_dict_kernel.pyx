# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The walk over sentences of feature dicts behind DictSequenceVectorizer.

Why a kernel, and why this one.  The Python implementation built, for every
token, a new dict of ``"key=value"`` names (an f-string and two dict
operations per feature), and then handed the list of those dicts to
scikit-learn's ``DictVectorizer``, which walked them again (one more string
format, type test, dict lookup and ``array`` append per feature): the
features were read twice and every name was built on every token.  Most of
the time went to the interpreter's per-feature work, not to anything
inherent, so pure Python or NumPy cannot get far below ``DictVectorizer``
itself (it is one such loop).

Here one pass over the tokens reads each dict with ``PyDict_Next`` and never
builds a name it has built before: a string-valued feature is looked up in
two levels of dicts, key then value (``{key: {value: column}}``), whose
string hashes CPython caches in the key and value objects (the tutorial's
keys are literals, hashed once; each value is hashed once), so a feature
costs two dict probes and no allocation; ``"key=value"`` is built once per
distinct (key, value) pair, and then looked up in (or added to) the one
name -> column table, so two pairs that spell the same name (``{"a=b": "c"}``
and ``{"a": "b=c"}``) share their column as they did before.  A numeric
feature's name is its key, looked up directly.  Columns and values go
straight into growing C arrays; a last pass (without the GIL) maps fitted
columns to sorted order, sorts each row stably, adds up repeated columns in
their order of appearance and drops zeros, which gives exactly the CSR of
the former ``DictVectorizer`` route (same float sums, same entries).

The fast path takes a token only when it is an exact ``dict`` whose keys are
exact ``str`` and whose values are exact ``str``, ``float``, ``int`` or
``bool`` with a finite float value at most ``max_abs`` in absolute value.
Anything else (nested dicts and lists, lists as tokens, subclasses, NumPy
scalars, a bad value) sends that whole token to the general Python function
(``general(token, where) -> {name: value}``), which names every problem as
before: what the fast path had written for the token is dropped first, and
the names it had added are the ones the general path adds first, in the same
order, so the column order cannot differ either.
"""
import numpy as np

cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport PyObject
from libc.math cimport fabs
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cnp.import_array()


cdef extern from "Python.h":
    # Declared on PyObject* (borrowed references from PyDict_Next) so that
    # testing a type costs no reference counting.
    bint _is_str "PyUnicode_CheckExact"(PyObject*)
    bint _is_float "PyFloat_CheckExact"(PyObject*)
    bint _is_int "PyLong_CheckExact"(PyObject*)
    bint _is_bool "PyBool_Check"(PyObject*)
    bint _is_dict "PyDict_CheckExact"(object)
    bint _is_list "PyList_CheckExact"(object)
    double _float_value "PyFloat_AS_DOUBLE"(PyObject*)
    double _int_value "PyLong_AsDouble"(PyObject*)
    Py_ssize_t _small_int "PyLong_AsSsize_t"(PyObject*)
    PyObject* _err_occurred "PyErr_Occurred"()
    void _err_clear "PyErr_Clear"()
    PyObject* _true "Py_True"
    Py_ssize_t _list_size "PyList_GET_SIZE"(object)
    PyObject* _list_item "PyList_GET_ITEM"(object, Py_ssize_t)


#: Rows at most this long are sorted by insertion (a token has tens of
#: features); longer ones by merging, so that no input is quadratic.
cdef enum:
    _INSERTION_MAX = 32


cdef class FeatureWalk:
    """One walk over sentences of feature dicts: columns, values, rows.

    Parameters
    ----------
    names : dict of str to int
        The name -> column table: empty and growing when ``fitting`` (the
        columns in order of first appearance), else the fitted vocabulary
        (names it lacks are skipped).
    fitting : bool
    store : bool
        Keep the entries (False: only learn the names).
    general : callable
        ``general(token, where)`` -> dict of name to value: the general path
        for a token the fast path does not take.
    check_sentence : callable
        ``check_sentence(sentence, i)``: raises for anything but a non-empty
        sequence; called for every sentence that is not a non-empty list.
    max_abs : float
        Largest absolute value the fast path takes.
    """
    cdef dict names
    cdef readonly list name_list
    cdef dict pairs             # key -> {value: column} for string values
    cdef bint fitting, store
    cdef object general, check_sentence
    cdef double max_abs
    cdef int64_t* cols
    cdef double* vals
    cdef Py_ssize_t nnz, cap
    cdef int64_t* rows          # rows[r]: where token r's entries start
    cdef Py_ssize_t n_rows, row_cap
    cdef list offsets
    cdef bint finished

    def __cinit__(self, dict names, bint fitting, bint store, general, check_sentence,
                  double max_abs):
        self.names = names
        self.name_list = list(names) if fitting else None
        self.pairs = {}
        self.fitting = fitting
        self.store = store
        self.general = general
        self.check_sentence = check_sentence
        self.max_abs = max_abs
        self.cols = NULL
        self.vals = NULL
        self.rows = NULL
        self.nnz = self.cap = self.n_rows = self.row_cap = 0
        self.offsets = [0]
        self.finished = False
        self._grow_rows()

    def __dealloc__(self):
        PyMem_Free(self.cols)
        PyMem_Free(self.vals)
        PyMem_Free(self.rows)

    cdef int _grow_rows(self) except -1:
        cdef Py_ssize_t cap = 2 * self.row_cap + 1024
        cdef int64_t* rows = <int64_t*>PyMem_Realloc(self.rows, (cap + 1) * sizeof(int64_t))
        if rows == NULL:
            raise MemoryError()
        self.rows, self.row_cap = rows, cap
        self.rows[self.n_rows] = self.nnz
        return 0

    cdef int _push(self, Py_ssize_t col, double value) except -1:
        cdef Py_ssize_t cap
        cdef int64_t* cols
        cdef double* vals
        if self.nnz == self.cap:
            cap = 2 * self.cap + 4096
            cols = <int64_t*>PyMem_Realloc(self.cols, cap * sizeof(int64_t))
            if cols == NULL:
                raise MemoryError()
            self.cols = cols
            vals = <double*>PyMem_Realloc(self.vals, cap * sizeof(double))
            if vals == NULL:
                raise MemoryError()
            self.vals, self.cap = vals, cap
        self.cols[self.nnz] = col
        self.vals[self.nnz] = value
        self.nnz += 1
        return 0

    cdef Py_ssize_t _column(self, object name) except -2:
        """The column of ``name`` (a str); -1 for a name not in the fitted
        vocabulary; a new column for a new name while fitting."""
        cdef PyObject* found = PyDict_GetItem(self.names, name)
        cdef Py_ssize_t col
        if found != NULL:
            return <Py_ssize_t><object>found
        if not self.fitting:
            return -1
        col = len(self.name_list)
        self.names[name] = col
        self.name_list.append(name)
        return col

    cdef bint _fast(self, dict token) except -1:
        """Write the entries of a token (a dict); False, having written
        nothing, if it is not one the fast path takes."""
        cdef Py_ssize_t pos = 0, start = self.nnz, col
        cdef PyObject* k
        cdef PyObject* v
        cdef PyObject* found
        cdef object key, inner
        cdef double x
        while PyDict_Next(token, &pos, &k, &v):
            if not _is_str(k):
                self.nnz = start
                return False
            key = <object>k             # (a reference held while Python code runs)
            if _is_str(v):
                x = 1.0
                found = PyDict_GetItem(self.pairs, key)
                if found == NULL:
                    inner = {}
                    self.pairs[key] = inner
                else:
                    inner = <object>found
                found = PyDict_GetItem(inner, <object>v)
                if found != NULL:
                    col = _small_int(found)
                else:
                    value = <object>v
                    col = self._column(f"{key}={value}")
                    inner[value] = col
            else:
                if _is_float(v):
                    x = _float_value(v)
                elif _is_bool(v):
                    x = 1.0 if v == _true else 0.0
                elif _is_int(v):
                    x = _int_value(v)
                    if x == -1.0 and _err_occurred() != NULL:
                        _err_clear()            # too large: the general path says so
                        self.nnz = start
                        return False
                else:
                    self.nnz = start
                    return False
                if not fabs(x) <= self.max_abs:     # (NaN too)
                    self.nnz = start
                    return False
                col = self._column(key)
            if col >= 0 and self.store:
                self._push(col, x)
        return True

    cdef int _token(self, object token, Py_ssize_t i, Py_ssize_t t) except -1:
        cdef dict features
        cdef Py_ssize_t col
        if not (_is_dict(token) and self._fast(<dict>token)):
            features = self.general(token, f"X[{i}][{t}]")
            for name, value in features.items():
                col = self._column(name)
                if col >= 0 and self.store:
                    self._push(col, value)
        self.n_rows += 1
        if self.n_rows == self.row_cap:
            self._grow_rows()
        self.rows[self.n_rows] = self.nnz
        return 0

    def walk(self, list sentences):
        """Read every token of ``sentences`` (a list), in order."""
        cdef Py_ssize_t i, t
        for i in range(len(sentences)):
            sentence = sentences[i]
            if _is_list(sentence) and _list_size(sentence) > 0:
                t = 0
                # (the size is read again each time: the general path runs
                # user code, which may change the list, as enumerate allows)
                while t < _list_size(sentence):
                    token = <object>_list_item(sentence, t)     # (a reference held)
                    self._token(token, i, t)
                    t += 1
            else:
                self.check_sentence(sentence, i)
                for t, token in enumerate(sentence):
                    self._token(token, i, t)
            self.offsets.append(self.n_rows)

    def csr(self, cnp.int64_t[::1] perm=None):
        """The CSR arrays (indptr, indices, data) and the sentence offsets:
        columns mapped through ``perm`` (if given), each row sorted by
        column, repeated columns added up in order, zeros dropped."""
        cdef Py_ssize_t j, nnz
        if self.finished:
            raise RuntimeError("csr() gives the arrays once")
        if perm is not None and not (self.fitting and perm.shape[0] == len(self.name_list)):
            raise ValueError("perm: one entry per fitted name expected")
        self.finished = True
        if perm is not None:
            for j in range(self.nnz):   # (the columns were given here, < n_cols)
                self.cols[j] = perm[self.cols[j]]
        cdef cnp.ndarray[cnp.int64_t, ndim=1] indptr = np.empty(self.n_rows + 1, np.int64)
        with nogil:
            nnz = _finish_rows(self.rows, self.n_rows, self.cols, self.vals,
                               <int64_t*>indptr.data)
        if nnz < 0:
            raise MemoryError()
        indices = np.empty(nnz, np.int64)
        data = np.empty(nnz, np.float64)
        if nnz:
            memcpy(cnp.PyArray_DATA(indices), self.cols, nnz * sizeof(int64_t))
            memcpy(cnp.PyArray_DATA(data), self.vals, nnz * sizeof(double))
        return indptr, indices, data, np.array(self.offsets, dtype=np.int64)


cdef void _insertion_sort(int64_t* cols, double* vals, Py_ssize_t n) noexcept nogil:
    """Stable: equal columns keep their order (that of their sum)."""
    cdef Py_ssize_t i, j
    cdef int64_t c
    cdef double v
    for i in range(1, n):
        c, v = cols[i], vals[i]
        j = i
        while j > 0 and cols[j - 1] > c:
            cols[j], vals[j] = cols[j - 1], vals[j - 1]
            j -= 1
        cols[j], vals[j] = c, v


cdef void _merge_sort(int64_t* cols, double* vals, Py_ssize_t n, int64_t* tc,
                      double* tv) noexcept nogil:
    """Stable bottom-up merge sort of a long row, with scratch ``tc``, ``tv``
    of ``n`` entries; runs of _INSERTION_MAX start sorted by insertion."""
    cdef Py_ssize_t width, lo, mid, hi, a, b, k
    lo = 0
    while lo < n:
        _insertion_sort(cols + lo, vals + lo, min(<Py_ssize_t>_INSERTION_MAX, n - lo))
        lo += _INSERTION_MAX
    width = _INSERTION_MAX
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if cols[b] < cols[a]:       # (ties from the left: stable)
                    tc[k], tv[k] = cols[b], vals[b]
                    b += 1
                else:
                    tc[k], tv[k] = cols[a], vals[a]
                    a += 1
                k += 1
            while a < mid:
                tc[k], tv[k] = cols[a], vals[a]
                a += 1
                k += 1
            while b < hi:
                tc[k], tv[k] = cols[b], vals[b]
                b += 1
                k += 1
            lo = hi
        memcpy(cols, tc, n * sizeof(int64_t))
        memcpy(vals, tv, n * sizeof(double))
        width *= 2


cdef Py_ssize_t _finish_rows(const int64_t* rows, Py_ssize_t n_rows, int64_t* cols,
                             double* vals, int64_t* indptr) noexcept nogil:
    """Sort each row, add up repeated columns, drop zeros, compact in place;
    the number of entries kept (-1 if out of memory)."""
    cdef Py_ssize_t r, j, start, end, n, w = 0, longest = 0
    cdef int64_t* tc = NULL
    cdef double* tv = NULL
    cdef double s
    for r in range(n_rows):
        longest = max(longest, rows[r + 1] - rows[r])
    if longest > _INSERTION_MAX:
        tc = <int64_t*>malloc(longest * sizeof(int64_t))
        tv = <double*>malloc(longest * sizeof(double))
        if tc == NULL or tv == NULL:
            free(tc)
            free(tv)
            return -1
    indptr[0] = 0
    for r in range(n_rows):
        start, end = rows[r], rows[r + 1]
        n = end - start
        if n > _INSERTION_MAX:
            _merge_sort(cols + start, vals + start, n, tc, tv)
        else:
            _insertion_sort(cols + start, vals + start, n)
        j = start
        while j < end:
            # 0.0 + the values in their order, as the dict of names added
            # them (0.0 + -0.0 is 0.0, dropped either way)
            s = 0.0 + vals[j]
            while j + 1 < end and cols[j + 1] == cols[j]:
                j += 1
                s = s + vals[j]
            if s != 0.0:
                cols[w], vals[w] = cols[j], s
                w += 1
            j += 1
        indptr[r + 1] = w
    free(tc)
    free(tv)
    return w

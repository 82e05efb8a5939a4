# cython: language_level=3, boundscheck=False, wraparound=False
"""Reading one column of the tokens of a corpus into integer codes, for the
compiled featurizer (``_featurize``).

This is the part of featurizing that needs the GIL: the tokens are Python
objects.  Each value is interned with a dict (a str caches its hash), so the
work per token is a tuple item or a dict lookup and one dict lookup.
"""
import numpy as np

from libc.stdint cimport int64_t

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cdef inline Py_ssize_t _intern(dict index, list uniques, object v):
    """The code of the value ``v`` in ``index`` (added, as the next code and
    at the end of ``uniques``, when new)."""
    cdef PyObject* p = PyDict_GetItem(index, v)
    if p != NULL:
        return <Py_ssize_t><object>p
    k = len(uniques)
    PyDict_SetItem(index, v, k)
    uniques.append(v)
    return k


cdef inline bint _intern_tuple(object t, const Py_ssize_t* seq, Py_ssize_t m,
                               Py_ssize_t* codes, Py_ssize_t stride, list indexes,
                               list uniques):
    """Intern the items ``seq[j]`` of the tuple ``t`` into their columns:
    ``codes[j * stride]`` their codes (:func:`_intern`); False, with the codes
    of the later columns unwritten, when ``t`` is too short or an item is
    not a str.  (Read by C index only within the tuple: with bounds checks
    off, Cython would read t[int] past its end.)"""
    cdef Py_ssize_t j
    cdef object v
    for j in range(m):
        if seq[j] >= PyTuple_GET_SIZE(t):
            return False
        v = <object>PyTuple_GET_ITEM(t, seq[j])
        if not isinstance(v, str):
            return False
        codes[j * stride] = _intern(<dict>indexes[j], <list>uniques[j], v)
    return True


def read_columns(list flat, int mode, list keys, object getters):
    """Codes and distinct values of several columns over the tokens ``flat``,
    in one pass: each token is read once for all its columns (the tokens are
    objects scattered in memory, and a pass per column met each of them again
    after the others had left the caches).

    ``mode`` 0: the token is the value (str tokens, the word); 1:
    ``token[keys[j]]`` (tuples, lists, arrays; ``keys[j]`` an int); 2:
    ``token[keys[j]]`` (mappings); 3: ``getters[j](token)``.  Returns a list
    of ``(codes, uniques)``, one per column (codes as intp, values in order of
    first appearance, as ``_tokens._factorize``), or None when a token has no
    such column or a value that is not a str: the caller then finds the token
    and raises its error.
    """
    cdef Py_ssize_t n = len(flat), m = len(keys), i, j
    codes = np.empty((m, n), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] c = codes
    cdef list indexes = [{} for _ in range(m)], uniques = [[] for _ in range(m)]
    cdef Py_ssize_t[::1] seq = np.array(keys if mode == 1 else [0] * m, dtype=np.intp)
    cdef object t, v
    for i in range(n):
        t = flat[i]
        if mode == 1 and type(t) is tuple:
            if not _intern_tuple(t, &seq[0], m, &c[0, i], n, indexes, uniques):
                return None
            continue
        for j in range(m):
            try:
                if mode == 0:
                    v = t
                elif mode == 3:
                    v = getters[j](t)
                else:
                    v = t[keys[j]]
            except (KeyError, IndexError, TypeError):
                return None
            if not isinstance(v, str):
                return None
            c[j, i] = _intern(<dict>indexes[j], <list>uniques[j], v)
    return [(codes[j], uniques[j]) for j in range(m)]


def flatten(list X, object check_sentence, list tuple_keys=None):
    """All tokens of the sentences ``X`` in one list, the sentence lengths,
    the set of the tokens' types, and, when every token is a tuple, the
    columns at ``tuple_keys`` as :func:`read_columns` reads them (else
    None), in one pass over the tokens.

    A sentence that is a non-empty list is taken as it is (what
    ``check_sentence`` would give, and the usual case: calling it cost more
    than featurizing the sentence); any other is passed to
    ``check_sentence(sentence, "X[i]", "tokens")``, which returns its tokens
    as a list or raises.  The types are collected so that the caller
    classifies each type once, not each token.  The columns are read in the
    same pass because it is the pass that brings each token into the cache.
    """
    cdef Py_ssize_t n = len(X), i, m = 0, n_tokens
    lengths = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ln = lengths
    cdef list flat = [], tokens
    cdef set types = set()
    cdef object sentence, tp, t, last = None
    for i in range(n):
        sentence = X[i]
        if type(sentence) is list and len(<list>sentence):
            tokens = <list>sentence
        else:
            tokens = check_sentence(sentence, f"X[{i}]", "tokens")
        ln[i] = len(tokens)
        flat.extend(tokens)
    n_tokens = len(flat)
    cdef bint reading = bool(tuple_keys)
    if reading:
        m = len(tuple_keys)
    codes = np.empty((m, n_tokens), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] c = codes
    cdef Py_ssize_t[::1] seq = np.array(tuple_keys if reading else [], dtype=np.intp)
    cdef list indexes = [{} for _ in range(m)], uniques = [[] for _ in range(m)]
    for i in range(n_tokens):
        t = flat[i]
        tp = type(t)
        if tp is not last:
            types.add(tp)
            last = tp
        if reading:
            reading = tp is tuple and _intern_tuple(t, &seq[0], m, &c[0, i], n_tokens,
                                                    indexes, uniques)
    columns = [(codes[j], uniques[j]) for j in range(m)] if reading else None
    return flat, lengths, types, columns


def word_keys(list words, dict cache, object key_of):
    """The int64 keys of the distinct ``words``: ``cache[word]``, or
    ``key_of(word)`` (which stores it in ``cache``) for a word not seen yet.
    In Cython so that the common case, a word met before, is one dict lookup
    written straight into the array (no list of Python ints)."""
    cdef Py_ssize_t n = len(words), i
    keys = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] k = keys
    cdef PyObject* p
    cdef object w
    for i in range(n):
        w = words[i]
        p = PyDict_GetItem(cache, w)
        k[i] = <object>p if p != NULL else key_of(w)
    return keys


def fitted_codes(list values, dict table):
    """``table[value]`` of each of the distinct ``values`` (intp), -1 for a
    value not in it: the fitted code of each distinct value of a test set."""
    cdef Py_ssize_t n = len(values), i
    out = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] o = out
    cdef PyObject* p
    for i in range(n):
        p = PyDict_GetItem(table, values[i])
        o[i] = <Py_ssize_t><object>p if p != NULL else -1
    return out

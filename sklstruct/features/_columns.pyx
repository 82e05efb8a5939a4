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

def read_column(list flat, int mode, Py_ssize_t seq_key, object dict_key, object getter):
    """Codes and distinct values of one column over the tokens ``flat``.

    ``mode`` 0: the token is the value (str tokens, the word); 1: ``token[seq_key]``
    (tuples, lists, arrays); 2: ``token[dict_key]`` (mappings); 3: ``getter(token)``.
    Returns ``(codes, uniques)`` (codes as intp, values in order of first
    appearance, as ``_tokens._factorize``), or None when a token has no such
    column or a value that is not a str: the caller then finds the token and
    raises its error.
    """
    cdef Py_ssize_t n = len(flat), i, k
    codes = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] c = codes
    cdef dict index = {}
    cdef list uniques = []
    cdef object t, v
    # (an object index: with bounds checks off, Cython would read t[int]
    # of a short tuple past its end)
    cdef object key = seq_key
    cdef PyObject* p
    for i in range(n):
        t = flat[i]
        try:
            if mode == 0:
                v = t
            elif mode == 1:
                if type(t) is tuple and seq_key < PyTuple_GET_SIZE(t):
                    v = <object>PyTuple_GET_ITEM(t, seq_key)
                else:
                    v = t[key]
            elif mode == 2:
                v = t[dict_key]
            else:
                v = getter(t)
        except (KeyError, IndexError, TypeError):
            return None
        if not isinstance(v, str):
            return None
        p = PyDict_GetItem(index, v)
        if p == NULL:
            k = len(uniques)
            PyDict_SetItem(index, v, k)
            uniques.append(v)
        else:
            k = <Py_ssize_t><object>p
        c[i] = k
    return codes, uniques


def flatten(list X, object check_sentence):
    """All tokens of the sentences ``X`` in one list, the sentence lengths
    and the set of the tokens' types, in one pass.

    A sentence that is a non-empty list is taken as it is (what
    ``check_sentence`` would give, and the usual case: calling it cost more
    than featurizing the sentence); any other is passed to
    ``check_sentence(sentence, "X[i]", "tokens")``, which returns its tokens
    as a list or raises.  The types are collected so that the caller
    classifies each type once, not each token.
    """
    cdef Py_ssize_t n = len(X), i, j, m
    lengths = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ln = lengths
    cdef list flat = [], tokens
    cdef set types = set()
    cdef object sentence, tp, last = None
    for i in range(n):
        sentence = X[i]
        if type(sentence) is list and len(<list>sentence):
            tokens = <list>sentence
        else:
            tokens = check_sentence(sentence, f"X[{i}]", "tokens")
        m = len(tokens)
        ln[i] = m
        for j in range(m):
            tp = type(tokens[j])
            if tp is not last:
                types.add(tp)
                last = tp
        flat.extend(tokens)
    return flat, lengths, types


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

# cython: language_level=3, boundscheck=False, wraparound=False
"""Reading one column of the tokens of a corpus into integer codes, for the
compiled featurizer (``_featurize``).

This is the part of featurizing that needs the GIL: the tokens are Python
objects.  Each value is interned with a dict (a str caches its hash), so the
work per token is a tuple item or a dict lookup and one dict lookup.
"""
import numpy as np

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

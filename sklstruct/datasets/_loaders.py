"""Loaders of the public corpora sklstruct is measured on, from local copies.

sklstruct ships and downloads none of them.  They are looked for under one
data directory (:func:`get_data_home`): the ``data_home`` argument, else the
``SKLSTRUCT_DATA`` environment variable, else ``~/sklstruct_data``::

    <data_home>/conll2000/train.txt, test.txt           CoNLL-2000 chunking
    <data_home>/conll2002/esp.train, esp.testa, esp.testb   CoNLL-2002 Spanish NER
    <data_home>/treebank/combined/wsj_*.mrg              Penn Treebank sample

The Penn Treebank sample is NLTK's (``nltk.download("treebank")``), so
without ``data_home`` :func:`load_treebank` also looks in NLTK's data
directories (``nltk_data/corpora/treebank/combined``).
"""
import os
import re
import sys

import numpy as np

from ..parsing.tree import preprocess as preprocess_tree
from ..parsing.tree import read_ptb
from ._conll import read_conll

__all__ = ["get_data_home", "load_conll2000", "load_conll2002_esp", "load_treebank"]

_DEFAULT_DATA_HOME = os.path.join("~", "sklstruct_data")


def get_data_home(data_home=None):
    """The directory in which the loaders look for the corpora.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The directory to use.  When None: the ``SKLSTRUCT_DATA`` environment
        variable if it is set and not empty, else ``~/sklstruct_data``.

    Returns
    -------
    data_home : str
        The directory with ``~`` expanded.  It is not created and need not
        exist (sklstruct downloads nothing into it).

    Examples
    --------
    >>> get_data_home("/data/corpora")
    '/data/corpora'
    """
    return _data_home(data_home)[0]


def _data_home(data_home):
    """(directory, where the choice came from) for messages."""
    if data_home is not None:
        return os.path.expanduser(os.fspath(data_home)), "data_home"
    env = os.environ.get("SKLSTRUCT_DATA")
    if env:
        return os.path.expanduser(env), "$SKLSTRUCT_DATA"
    return os.path.expanduser(_DEFAULT_DATA_HOME), "the default data home"


def _nltk_data_dirs():
    """NLTK's data search path (``nltk.data.path`` as NLTK sets it up, without
    importing NLTK): ``$NLTK_DATA``, ``~/nltk_data``, then system directories."""
    dirs = [d for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    dirs.append(os.path.expanduser(os.path.join("~", "nltk_data")))
    dirs += [os.path.join(sys.prefix, *parts, "nltk_data")
             for parts in [(), ("share",), ("lib",)]]
    if sys.platform.startswith("win"):
        dirs += [os.path.join(os.environ.get("APPDATA", "C:\\"), "nltk_data"),
                 r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    else:
        dirs += ["/usr/share/nltk_data", "/usr/local/share/nltk_data",
                 "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return dirs


def _find(corpus, relative, data_home, exists=os.path.isfile, nltk_relative=None):
    """The first of the candidate locations of ``relative`` that exists, else
    FileNotFoundError naming every place looked in.

    Candidates: ``<data home>/<relative>`` (see :func:`get_data_home`), then,
    when ``nltk_relative`` is given and ``data_home`` is None,
    ``<nltk dir>/<nltk_relative>`` for every NLTK data directory."""
    home, source = _data_home(data_home)
    looked = [(os.path.join(home, relative), source)]
    if nltk_relative is not None and data_home is None:
        looked += [(os.path.join(d, nltk_relative), "NLTK") for d in _nltk_data_dirs()]
    for path, _ in looked:
        if exists(path):
            return path
    places = ", ".join(f"{path!r} ({source})" for path, source in looked)
    raise FileNotFoundError(
        f"{corpus} not found; looked in {places}. Pass data_home=... or set "
        f"SKLSTRUCT_DATA to the directory that holds {relative!r}, or put a copy under "
        f"{_DEFAULT_DATA_HOME} (sklstruct does not ship or download this corpus)."
    )


def _load_conll(corpus, subdir, files, subset, data_home, encoding):
    if subset not in files:
        raise ValueError(
            f"subset must be one of {sorted(files)!r} for {corpus}, got {subset!r}."
        )
    path = _find(f"{corpus} {subset!r} file", os.path.join(subdir, files[subset]),
                 data_home)
    return read_conll(path, target_column=-1, encoding=encoding)


def load_conll2000(subset="train", data_home=None, encoding="utf-8"):
    """Load the CoNLL-2000 chunking corpus from a local copy.

    Reads ``<data_home>/conll2000/train.txt`` or ``test.txt`` (columns: word,
    POS, chunk tag).

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part to load.
    data_home : str or path-like, default=None
        Directory containing ``conll2000/``; None: see :func:`get_data_home`
        (``$SKLSTRUCT_DATA``, else ``~/sklstruct_data``).
    encoding : str, default="utf-8"
        File encoding.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of ``(word, POS)`` tokens.
    y : list of list of str
        Chunk tags.

    Raises
    ------
    FileNotFoundError
        If the file is missing (the message names the path looked at).
    ValueError
        If ``subset`` is not valid.
    """
    return _load_conll(
        "CoNLL-2000", "conll2000", {"train": "train.txt", "test": "test.txt"},
        subset, data_home, encoding,
    )


def load_conll2002_esp(subset="train", data_home=None, encoding="utf-8"):
    """Load the Spanish part of the CoNLL-2002 NER corpus from a local copy.

    Reads ``<data_home>/conll2002/esp.train``, ``esp.testa`` (development) or
    ``esp.testb`` (test), with columns word, POS and IOB2 entity tag.

    Parameters
    ----------
    subset : {"train", "testa", "testb"}, default="train"
        Which part to load.
    data_home : str or path-like, default=None
        Directory containing ``conll2002/``; None: see :func:`get_data_home`
        (``$SKLSTRUCT_DATA``, else ``~/sklstruct_data``).
    encoding : str, default="utf-8"
        File encoding; older copies of this corpus are ``"latin-1"``.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of ``(word, POS)`` tokens.
    y : list of list of str
        Entity tags (B-/I- PER, LOC, ORG, MISC and O).

    Raises
    ------
    FileNotFoundError
        If the file is missing (the message names the path looked at).
    ValueError
        If ``subset`` is not valid.
    """
    return _load_conll(
        "CoNLL-2002 Spanish", "conll2002",
        {"train": "esp.train", "testa": "esp.testa", "testb": "esp.testb"},
        subset, data_home, encoding,
    )


_WSJ_FILE = re.compile(r"wsj_(\d+)\.mrg$")
_TREEBANK = os.path.join("treebank", "combined")


def load_treebank(data_home=None, files=None, *, preprocess=True, collapse_unary=False,
                  remove_self_unary=False, return_file_ids=False):
    """Read the Penn Treebank sample (``treebank/combined/wsj_*.mrg``).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Directory holding ``treebank/combined``.  None: the data home of
        :func:`get_data_home` (``$SKLSTRUCT_DATA``, else ``~/sklstruct_data``),
        then NLTK's data directories (``$NLTK_DATA``, ``~/nltk_data``, the
        system ones), where ``nltk.download("treebank")`` puts this sample
        as ``corpora/treebank/combined``.
    files : iterable of int or str, default=None
        Which files: file numbers (``1`` for ``wsj_0001.mrg``) or file names.
        ``None`` reads every ``wsj_*.mrg`` in numeric order.
    preprocess : bool, default=True
        Apply :func:`~sklstruct.parsing.preprocess` (function tags stripped,
        empty elements removed) to every tree.
    collapse_unary, remove_self_unary : bool, default=False
        Passed to :func:`~sklstruct.parsing.preprocess` (ignored when
        ``preprocess=False``).
    return_file_ids : bool, default=False
        Also return an int array with the file number of every tree, e.g. to
        split train/test by file as is customary for the WSJ sections.

    Returns
    -------
    trees : list of Tree
    file_ids : ndarray of shape (n_trees,), dtype=int
        Only when ``return_file_ids=True``.

    Raises
    ------
    FileNotFoundError
        If the sample is not found (the message names every directory looked
        in) or a requested file is missing.
    ValueError
        If ``files`` holds something other than file numbers or names.
    """
    directory = _find("Penn Treebank sample", _TREEBANK, data_home, exists=os.path.isdir,
                      nltk_relative=os.path.join("corpora", _TREEBANK))
    if files is None:
        names = sorted(
            (int(m.group(1)), f) for f in os.listdir(directory)
            if (m := _WSJ_FILE.match(f))
        )
    else:
        names = []
        for f in files:
            if isinstance(f, (int, np.integer)) and not isinstance(f, bool):
                names.append((int(f), f"wsj_{int(f):04d}.mrg"))
            elif isinstance(f, str) and (m := _WSJ_FILE.match(os.path.basename(f))):
                names.append((int(m.group(1)), os.path.basename(f)))
            else:
                raise ValueError(
                    f"files must hold file numbers or names like 'wsj_0001.mrg', got {f!r}."
                )
    trees, ids = [], []
    for number, fname in names:
        path = os.path.join(directory, fname)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Treebank file {path!r} not found.")
        part = read_ptb(path)
        if preprocess:
            part = [
                preprocess_tree(t, collapse_unary=collapse_unary,
                                remove_self_unary=remove_self_unary)
                for t in part
            ]
        trees.extend(part)
        ids.extend([number] * len(part))
    if return_file_ids:
        return trees, np.asarray(ids, dtype=int)
    return trees

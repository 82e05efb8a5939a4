"""CoNLL column files as Dask bags, read and parsed on the workers
(:func:`read_conll_bag`).

A file is cut into ``partitions_per_file`` byte ranges of equal size, each
read by its own task.  A sentence belongs to the range in which its first
line begins, where "begins" is counted from the last sentence break
(blank or ``-DOCSTART-`` line) before it: a task whose range starts inside
a file skips the lines up to the first break at or after its start, and a
task reads past the end of its range up to the first break after it, so
every sentence is read by exactly one task, whole.  Each range is parsed
by :func:`sklstruct.datasets.read_conll`'s own parser, with the same
options, messages and line numbers, so the bags hold the same sentences in
the same order as ``read_conll`` over the files one after the other.
Lines are split at the byte ``\\n``, which suits every ASCII-compatible
encoding (UTF-8, latin-1, ...), not UTF-16.
"""
import codecs
import glob
import operator
import os

from ._conll import _BLANKS, _DOCSTART, _check_options, _fields, _is_int, _parse_lines

__all__ = ["read_conll_bag"]

_CHUNK = 1 << 20


def _is_break(raw, encoding, sep):
    """Whether a raw line ends a sentence (blank, or ``-DOCSTART-``)."""
    text = raw.decode(encoding, errors="replace").rstrip("\r\n")
    if not text.strip(_BLANKS):
        return True
    fields = _fields(text, sep)
    return bool(fields) and fields[0] == _DOCSTART


def _first_width(f, name, encoding, sep):
    """The columns of the file's first token line (what read_conll takes
    n_columns from); raise as read_conll does for a file without one."""
    f.seek(0)
    n_lines = 0
    for n_lines, raw in enumerate(f, 1):
        text = raw.decode(encoding, errors="replace").rstrip("\r\n")
        if n_lines == 1:
            text = text.lstrip("\ufeff")
        fields = _fields(text, sep)
        if fields and fields[0] != _DOCSTART:
            return len(fields)
    raise ValueError(f"{name}: no sentences ({n_lines} line(s), none with tokens).")


def _lines_before(f, pos):
    """How many lines end before byte ``pos``."""
    f.seek(0)
    count, left = 0, pos
    while left > 0:
        chunk = f.read(min(_CHUNK, left))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def _range_lines(f, start, stop, encoding, sep):
    """The raw lines of the sentences of bytes [start, stop) (see the module
    docstring), and the 0-based number of the first of them."""
    f.seek(max(start - 1, 0))
    if start > 0:
        f.readline()                   # the rest of the line holding byte start - 1
    pos = f.tell()
    first = _lines_before(f, pos)
    f.seek(pos)
    lines = []
    raw = f.readline()
    if start > 0:
        # a sentence running into the range belongs to the range before
        while raw and not _is_break(raw, encoding, sep):
            pos += len(raw)
            first += 1
            raw = f.readline()
    while raw and pos < stop:
        lines.append(raw)
        pos += len(raw)
        raw = f.readline()
    # the sentence running out of the range is this range's
    while raw and not _is_break(raw, encoding, sep):
        lines.append(raw)
        raw = f.readline()
    return lines, first


def _read_range(path, part, n_parts, target_column, encoding, sep, n_columns, stamp=None):
    """(X, y) of range ``part`` of ``n_parts`` of the file ``path``
    (``stamp``, its modification time, only makes the task's key)."""
    fname = os.fspath(path)
    name = repr(os.fsdecode(fname))
    with open(fname, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if n_columns is None:
            n_columns = _first_width(f, name, encoding, sep)
        start, stop = size * part // n_parts, size * (part + 1) // n_parts
        lines, first = _range_lines(f, start, stop, encoding, sep)
    X, y = _parse_lines(lines, name, target_column, encoding, sep, n_columns,
                        first_line=first + 1, allow_empty=True)
    return X, ([] if y is None else y)


def _expand(paths):
    """The files of ``paths`` (one path or a list; globs expanded, sorted)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    files = []
    for p in paths:
        p = os.fspath(p)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if glob.has_magic(p):
            found = sorted(glob.glob(p))
            if not found:
                raise FileNotFoundError(f"paths: no file matches {p!r}")
            files.extend(found)
        else:
            files.append(p)
    if not files:
        raise ValueError("paths: no file given")
    return files


def read_conll_bag(paths, target_column=-1, encoding="utf-8", sep=None, n_columns=None, *,
                   partitions_per_file=1):
    """Read CoNLL-style column files into two Dask bags, on the workers.

    The bags' partitions are the files' byte ranges, read and parsed where
    they are computed (on the workers, with a ``dask.distributed`` client),
    so the calling process never holds the corpus: an estimator fitted on
    them (:class:`sklstruct.CRFTagger`) works where the partitions are.
    Parsing is :func:`read_conll`'s, with the same options and messages:
    concatenated, the bags hold the sentences that ``read_conll`` gives for
    each file in turn, in that order.

    Parameters
    ----------
    paths : str, path-like, or list of them
        Files, or glob patterns (expanded here, sorted; they must match a
        file).  The workers must see the same paths (a shared filesystem).
    target_column, encoding, sep, n_columns
        As for :func:`read_conll` (``n_columns=None``: each file's first
        token line gives its column count).  ``encoding`` must write a line
        break as the byte ``\\n`` (UTF-8, latin-1 and the like; not UTF-16).
    partitions_per_file : int, default=1
        Byte ranges of equal size each file is cut into; a sentence belongs
        to the range where it begins (a range may hold none).

    Returns
    -------
    X : dask.bag.Bag
        One element per sentence: a list of token tuples, as ``read_conll``.
    y : dask.bag.Bag or None
        The label sequences, with the same partitions as ``X``; None when
        ``target_column`` is None.

    Raises
    ------
    ValueError
        On a wrong option here; on a malformed file when the bags are
        computed, with the message of :func:`read_conll` (file and line).
    FileNotFoundError
        If a glob pattern matches no file.

    See Also
    --------
    read_conll : Read one file into lists.

    Examples
    --------
    >>> X, y = read_conll_bag("corpus/*.conll", partitions_per_file=4)  # doctest: +SKIP
    >>> X.npartitions == y.npartitions                                   # doctest: +SKIP
    True
    """
    _check_options(target_column, sep, n_columns)
    if not (_is_int(partitions_per_file) and partitions_per_file >= 1):
        raise ValueError("partitions_per_file must be a positive int, got "
                         f"{partitions_per_file!r}.")
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise ValueError(f"Unknown encoding {encoding!r}.") from None
    import dask
    import dask.bag as db

    read = dask.delayed(_read_range, pure=True)
    parts = []
    for path in _expand(paths):
        try:                          # a file rewritten since gets new keys
            stamp = os.stat(path).st_mtime_ns
        except OSError:
            stamp = None              # (the workers may see files this process does not)
        for i in range(partitions_per_file):
            parts.append(read(path, i, partitions_per_file, target_column, encoding, sep,
                              n_columns, stamp))
    pick = dask.delayed(operator.getitem, pure=True)
    X = db.from_delayed([pick(p, 0) for p in parts])
    y = None if target_column is None else db.from_delayed([pick(p, 1) for p in parts])
    return X, y

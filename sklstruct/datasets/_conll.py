"""Reading and writing CoNLL column files (:func:`read_conll`, :func:`write_conll`).

One token per line as a fixed number of columns, a blank line between
sentences: the format of the CoNLL shared tasks and of the ``conlleval``
script.  Lines end at ``"\\n"`` only (an optional ``"\\r"`` before it is
dropped), so the Unicode line separators U+2028, U+2029 and U+0085 are
ordinary characters inside a word; columns are separated by runs of ASCII
spaces and tabs unless a separator is given, so a no-break space belongs to
its word as well.
"""
import codecs
import itertools
import numbers
import os
import re
from sys import intern

from .._files import decode_error, locate_decode_error

__all__ = ["read_conll", "write_conll"]

_DOCSTART = "-DOCSTART-"
# What separates columns by default, and what is stripped around a field read
# with an explicit separator: ASCII spaces and tabs, never other whitespace.
_BLANKS = " \t"
_BLANK_RUN = re.compile("[ \t]+")
_BOM = "\ufeff"


_LATIN1_HINT = ("Older copies of the CoNLL corpora are latin-1 encoded; try "
                "read_conll(..., encoding='latin-1').")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _file_label(f, default="<stream>"):
    name = getattr(f, "name", None)
    if isinstance(name, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(name))
    return default


def _normalize_target(target_column, n_columns, where):
    """Map ``target_column`` to a non-negative index or raise ValueError."""
    if target_column is None:
        return None
    if not -n_columns <= target_column < n_columns:
        raise ValueError(
            f"target_column={target_column} is out of range for {where} with "
            f"{n_columns} column(s); valid values are {-n_columns}..{n_columns - 1} "
            "or None."
        )
    if n_columns == 1:
        raise ValueError(
            f"{where}: a single column; with target_column={target_column} no "
            "column would be left for the tokens. Use target_column=None to read "
            "unlabeled files."
        )
    return target_column % n_columns


def _decoded(lines, name, encoding, first_line=1):
    """Decode binary lines one by one, reporting the line of a failure."""
    for lineno, line in enumerate(lines, first_line):
        try:
            yield line.decode(encoding)
        except UnicodeDecodeError as exc:
            raise decode_error(name, encoding, lineno, exc, _LATIN1_HINT) from None


def _text_lines(lines, name, encoding, first_line=1):
    """``lines`` (str, or bytes decoded with ``encoding``) without the byte-order
    mark an editor may put at the start of a UTF-8 file."""
    lines = iter(lines)
    first = next(lines, "")
    if isinstance(first, bytes):
        lines = _decoded(itertools.chain([first], lines), name, encoding, first_line)
        first = next(lines, "")
    if first.startswith(_BOM):
        first = first[len(_BOM):]
    return itertools.chain([first], lines)


def _fields(line, sep):
    """The fields of one line (without its line ending) as :func:`read_conll`
    splits it with separator ``sep``; ``[]`` for a blank line."""
    if sep is None:
        fields = line.split(" ")
        if "" in fields or "\t" in line:  # rare: tabs, several or outer spaces
            line = line.strip(_BLANKS)
            fields = _BLANK_RUN.split(line) if line else []
        return fields
    if not line.strip(_BLANKS):
        return []
    return [field.strip(_BLANKS) for field in line.split(sep)]


def _parse_lines(lines, name, target_column, encoding, sep, n_columns, docstarts=None,
                 first_line=1, allow_empty=False):
    """Core of :func:`read_conll`; ``lines`` is any iterable of str lines,
    the first of them line ``first_line`` of the file (for messages).  A
    part of a file (:func:`sklstruct.datasets.read_conll_bag`) may hold no
    sentence (``allow_empty``)."""
    X, y = [], []
    tokens, labels = [], []
    target = None
    if n_columns is not None:
        target = _normalize_target(target_column, n_columns, name)
    lineno = first_line - 1
    for lineno, line in enumerate(_text_lines(lines, name, encoding, first_line), first_line):
        line = line.rstrip("\r\n")
        if "\r" in line:
            # CR-only line ends (old Mac files) read as one line of hundreds of columns
            raise ValueError(f"{name}, line {lineno}: a carriage return (CR) inside the line; "
                             "the file's lines must end in LF or CR LF")
        fields = _fields(line, sep)
        if not fields or fields[0] == _DOCSTART:
            if tokens:
                X.append(tokens)
                y.append(labels)
                tokens, labels = [], []
            if fields and docstarts is not None:
                docstarts.append((len(X), tuple(fields)))
            continue
        if len(fields) != n_columns:
            if n_columns is None:
                n_columns = len(fields)
                target = _normalize_target(target_column, n_columns, f"{name}, line {lineno}")
            else:
                raise ValueError(
                    f"{name}, line {lineno}: expected {n_columns} columns, "
                    f"found {len(fields)}: {line!r}"
                )
        # each value shared with its earlier occurrences (sys.intern): the
        # same word is one string object in the whole corpus, and in the
        # vectorizer's fitted vocabulary, which then finds it by identity
        # and with its hash at hand (tagging read 20-30% faster), in a
        # fraction of the memory
        fields = list(map(intern, fields))
        if target is None:
            tokens.append(tuple(fields))
        else:
            labels.append(fields.pop(target))
            tokens.append(tuple(fields))
    if tokens:
        X.append(tokens)
        y.append(labels)
    if not X and not allow_empty:
        raise ValueError(f"{name}: no sentences ({lineno} line(s), none with tokens).")
    return X, (None if target_column is None else y)


def _check_options(target_column, sep, n_columns):
    """Raise ValueError on a reading option of the wrong type or range."""
    if target_column is not None and not _is_int(target_column):
        raise ValueError(
            f"target_column must be an int or None, got {target_column!r}."
        )
    if n_columns is not None and not (_is_int(n_columns) and n_columns >= 1):
        raise ValueError(f"n_columns must be a positive int or None, got {n_columns!r}.")
    if sep is not None and (not isinstance(sep, str) or sep == ""):
        raise ValueError(f"sep must be None or a non-empty string, got {sep!r}.")


def read_conll(path, target_column=-1, encoding="utf-8", sep=None, n_columns=None, *,
               docstarts=None):
    """Read a CoNLL-style column file into token and label sequences.

    Each non-blank line holds one token as a fixed number of columns; blank
    lines (empty, or only spaces and tabs) separate sentences.  Several blank
    lines in a row count as one break and the last sentence need not be
    followed by a blank line.  Lines whose first field is ``-DOCSTART-``
    (document boundaries in some CoNLL corpora) are dropped and end the
    current sentence.  Lines end at ``\\n`` (``\\r\\n`` is accepted too); other
    Unicode line breaks such as U+2028 are ordinary characters.  A UTF-8
    byte-order mark at the start of the file is dropped.

    Parameters
    ----------
    path : str, path-like or file object
        File to read.  A file object should be opened in text mode (binary
        objects are decoded line by line with ``encoding``); it is read from
        its current position and not closed.  Its lines are what iterating
        over it gives (a file opened with ``newline="\\n"``, like a path read
        here, ends lines at ``\\n`` only).
    target_column : int or None, default=-1
        Index of the label column; negative values count from the end.  All
        other columns, in file order, make up the token tuples.  If None, the
        file is taken as unlabeled: every column goes to ``X`` and ``y`` is
        None.
    encoding : str, default="utf-8"
        Text encoding used when ``path`` is a file name.
    sep : str or None, default=None
        Column separator.  None splits on any run of ASCII spaces and tabs
        (a no-break space or any other character belongs to its field); a
        string (e.g. ``"\\t"``) splits on exactly that string, so fields may
        then contain spaces.  Spaces and tabs around each field are dropped
        either way.
    n_columns : int or None, default=None
        Expected number of columns.  If None it is taken from the first token
        line.
    docstarts : list or None, default=None
        If a list, each ``-DOCSTART-`` line is appended to it as
        ``(i, fields)``: ``i`` the index in ``X`` of the sentence after it
        (``len(X)`` at the end), ``fields`` all its columns; so that a
        program can write them back (``sklstruct tag``) or count them as
        conlleval does (``sklstruct evaluate``).

    Returns
    -------
    X : list of list of tuple of str
        One list per sentence, one tuple of the non-target columns per token,
        e.g. ``('Confidence', 'NN')`` for CoNLL-2000, or ``('word',)`` for a
        two-column word/tag file.
    y : list of list of str or None
        The target column of each token, aligned with ``X``; None when
        ``target_column`` is None.

    Raises
    ------
    ValueError
        If a line has the wrong number of columns (the message names the file
        and the 1-based line number), if ``target_column`` is out of range,
        if the file cannot be decoded with ``encoding``, or if it holds no
        sentence at all.

    See Also
    --------
    write_conll : Write sentences and label columns in the same format.

    Examples
    --------
    >>> import io
    >>> X, y = read_conll(io.StringIO("He PRP B-NP\\nran VBD B-VP\\n\\nOK UH O\\n"))
    >>> X
    [[('He', 'PRP'), ('ran', 'VBD')], [('OK', 'UH')]]
    >>> y
    [['B-NP', 'B-VP'], ['O']]
    """
    _check_options(target_column, sep, n_columns)

    if hasattr(path, "read"):
        name = _file_label(path)
        lines_read = [0]

        def counted(f):
            for line in f:
                lines_read[0] += 1
                yield line

        try:
            return _parse_lines(
                counted(path), name, target_column, encoding, sep, n_columns, docstarts
            )
        except UnicodeDecodeError as exc:
            fname = getattr(path, "name", None)
            lineno = None
            if isinstance(fname, (str, os.PathLike)) and os.path.isfile(fname):
                file_encoding = getattr(path, "encoding", None) or encoding
                lineno, located = locate_decode_error(fname, file_encoding)
                encoding = file_encoding
                exc = located or exc
            if lineno is None:
                lineno = f"{lines_read[0] + 1} or later"
            raise decode_error(name, encoding, lineno, exc, _LATIN1_HINT) from None

    fname = os.fspath(path)
    name = repr(os.fsdecode(fname))
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"Unknown encoding {encoding!r}.") from None
    try:
        with open(fname, encoding=encoding, newline="\n") as f:
            return _parse_lines(f, name, target_column, encoding, sep, n_columns, docstarts)
    except UnicodeDecodeError:
        lineno, exc = locate_decode_error(fname, encoding)
        raise decode_error(name, encoding, lineno, exc, _LATIN1_HINT) from None


def _as_fields(token):
    if isinstance(token, str):
        return [token]
    return [str(field) for field in token]


def write_conll(file, X, *label_columns, sep=" ", encoding="utf-8"):
    """Write sentences and label columns as a CoNLL-style column file.

    Every token is written on its own line as its columns followed by one
    column per entry of ``label_columns`` (e.g. gold then predicted tags, the
    input layout of the ``conlleval`` script), and every sentence is followed
    by a blank line.  The output is read back by :func:`read_conll`.

    Parameters
    ----------
    file : str, path-like or file object
        Destination.  A path is (over)written; a text file object is written
        at its current position and left open.
    X : list of list of tuple
        Sentences; each token is a tuple (or list) of column values, or a
        single string for one-column tokens.  Values are converted with
        ``str``.  All tokens must have the same number of columns.
    *label_columns : list of list of str
        Zero or more label sequences aligned with ``X`` (same number of
        sentences and, sentence by sentence, the same lengths).
    sep : str, default=" "
        Column separator.
    encoding : str, default="utf-8"
        Encoding used when ``file`` is a path.

    Raises
    ------
    ValueError
        If the number of sentences or a sentence length does not match
        between ``X`` and a label column (the message names the sentence
        index), if a sentence is empty, if tokens have different numbers of
        columns, or if a value contains a line break or the separator, or
        begins or ends with a space or tab (with the default ``sep=" "``: if
        it is empty or contains a space or tab), since the file could not be
        read back.

    See Also
    --------
    read_conll : Read such a file.

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> write_conll(buf, [[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    >>> buf.getvalue()
    'He PRP B-NP\\nran VBD B-VP\\n\\n'
    """
    if not isinstance(sep, str) or sep == "" or "\n" in sep or "\r" in sep:
        raise ValueError(f"sep must be a non-empty string without line breaks, got {sep!r}.")
    X = list(X)
    label_columns = [list(col) for col in label_columns]
    for k, col in enumerate(label_columns):
        if len(col) != len(X):
            raise ValueError(
                f"label column {k} has {len(col)} sentences but X has {len(X)}."
            )
    # With the default single-space separator the file must also be readable
    # with read_conll's default splitting on spaces and tabs.
    read_sep = None if sep == " " else sep
    out_lines = []
    n_fields = None
    for i, sent in enumerate(X):
        sent = list(sent)
        if not sent:
            raise ValueError(
                f"sentence {i} is empty; a CoNLL file cannot represent empty sentences."
            )
        labels = []
        for k, col in enumerate(label_columns):
            lab = col[i]
            if isinstance(lab, str):
                raise ValueError(
                    f"label column {k} holds a string for sentence {i}; expected a "
                    "sequence with one label per token."
                )
            if len(lab) != len(sent):
                raise ValueError(
                    f"sentence {i} has {len(sent)} tokens but label column {k} has "
                    f"{len(lab)} labels for it."
                )
            labels.append(lab)
        for j, token in enumerate(sent):
            fields = _as_fields(token)
            fields.extend(str(lab[j]) for lab in labels)
            if n_fields is None:
                n_fields = len(fields)
            elif len(fields) != n_fields:
                raise ValueError(
                    f"sentence {i}, token {j} has {len(fields)} column(s) (with labels), "
                    f"expected {n_fields} like the first token."
                )
            line = sep.join(fields)
            if "\n" in line or "\r" in line or _fields(line, read_sep) != fields:
                raise ValueError(
                    f"sentence {i}, token {j}: {fields!r} cannot be read back: a value "
                    f"is empty, holds the separator {sep!r} or a line break, or begins "
                    "or ends with a space or tab"
                )
            out_lines.append(line)
        out_lines.append("")
    text = "\n".join(out_lines) + "\n" if out_lines else ""
    if hasattr(file, "write"):
        file.write(text)
    else:
        with open(file, "w", encoding=encoding, newline="") as f:
            f.write(text)

"""What the readers of text files share (the CoNLL column reader of
:mod:`sklstruct.datasets` and the Penn Treebank reader of
:mod:`sklstruct.parsing.tree`): the error for a file that its encoding cannot
decode, naming the file, the line and the offending byte."""


def locate_decode_error(path, encoding):
    """Return (line number, UnicodeDecodeError) of the first undecodable byte."""
    with open(path, "rb") as fb:
        data = fb.read()
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode(encoding, errors="replace")
        return good.count("\n") + 1, exc
    return None, None


def decode_error(name, encoding, lineno, exc, hint):
    """The ValueError for a file that ``encoding`` cannot decode: file, line,
    the offending byte, and ``hint`` (what to try instead)."""
    if lineno is None:
        lineno = "(unknown)"
    detail = f": {exc.reason} (byte {exc.object[exc.start:exc.start + 1]!r})" if exc else ""
    return ValueError(
        f"{name}, line {lineno}: cannot decode with encoding={encoding!r}{detail}. {hint}"
    )
